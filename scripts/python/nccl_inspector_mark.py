"""Iteration marks for nccl-inspector, from Python (PyTorch or anything else).

    from nccl_inspector_mark import mark
    for step, batch in enumerate(loader):
        mark(f"iteration {step}")
        ...

`mark(label)` writes a `mark` record into the plugin's log (`nccl-inspector iterations` cuts the job's time
at them). It is safe to call at any time: until NCCL has loaded the profiler plugin (PyTorch creates its
NCCL communicators lazily, at the first collective) it does nothing and returns -1, and it never loads a
second copy of the plugin. It finds the plugin NCCL loaded the way NCCL names it: `NCCL_PROFILER_PLUGIN` as
a path, or as a short name ("inspector" -> libnccl-profiler-inspector.so).

`name_tag(tag, name)` names a user tag (NCCL 2.31+'s ncclCollConfig_t.userProfilerTag) the same way: a
`tag` record, which the analyzer's tag groups (summary --group-by tag, compare --by-tag, report, trace) show.

Returns 0 (recorded), 1 (dropped: the plugin's ring was full; counted in its stats), or -1 (not active:
no plugin loaded yet, no communicator, NCCL_INSPECTOR_ENABLE=0, or another profiler plugin).
Labels are cut at 255 bytes. One file, standard library only: copy it next to your training script, or use
the installed copy (share/nccl-inspector/python/).
"""
import ctypes
import os

__all__ = ["mark", "name_tag", "flush"]

_lib = None


def _names():
    name = os.environ.get("NCCL_PROFILER_PLUGIN", "")
    if not name:
        return []
    if "/" in name or name.endswith(".so"):
        return [name]
    # NCCL tries the short name as libnccl-profiler-<name>.so, then as given.
    return ["libnccl-profiler-%s.so" % name, name]


def _plugin():
    global _lib
    if _lib is not None:
        return _lib
    for name in _names():
        try:
            # RTLD_NOLOAD: only the copy NCCL already loaded; fails (OSError) while there is none.
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        try:
            fn = lib.ncclInspectorMark
        except AttributeError:  # another profiler plugin
            continue
        fn.argtypes = [ctypes.c_char_p]
        fn.restype = ctypes.c_int
        lib.ncclInspectorFlush.argtypes = []
        lib.ncclInspectorFlush.restype = ctypes.c_int
        lib.ncclInspectorNameTag.argtypes = [ctypes.c_uint64, ctypes.c_char_p]
        lib.ncclInspectorNameTag.restype = ctypes.c_int
        _lib = lib
        return lib
    return None


def mark(label):
    """Writes a mark record with this label (str or bytes). 0 recorded, 1 dropped, -1 not active."""
    lib = _plugin()
    if lib is None:
        return -1
    if isinstance(label, str):
        label = label.encode("utf-8", "replace")
    return lib.ncclInspectorMark(bytes(label)[:255])


def name_tag(tag, name):
    """Names a user tag (the number set as ncclCollConfig_t.userProfilerTag, NCCL 2.31+) in the log: the
    analyzer's tag groups then show the name. 0 recorded, 1 dropped, -1 not active, -2 tag 0 or no name."""
    lib = _plugin()
    if lib is None:
        return -1
    if isinstance(name, str):
        name = name.encode("utf-8", "replace")
    tag = int(tag)
    if tag <= 0 or tag >= 1 << 64:
        return -2
    return lib.ncclInspectorNameTag(tag, bytes(name)[:255])


def flush():
    """Asks the plugin's dump thread to write everything now (does not wait). 0 asked, -1 not active."""
    lib = _plugin()
    return -1 if lib is None else lib.ncclInspectorFlush()
