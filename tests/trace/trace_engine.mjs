// Parses a trace with Chrome DevTools' trace engine (@paulirish/trace_engine,
// pinned in tests/js/package.json) and prints, as JSON, what it understood:
// per process, its name and per thread (name, entries), and how many flows it
// bound to slices. Usage:
//   node trace_engine.mjs NODE_MODULES_DIR trace.json[.gz]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, trace] = process.argv.slice(2);
const { analyzeTrace } = await import(
  pathToFileURL(path.join(modules, '@paulirish/trace_engine/analyze-trace.mjs')).href);
const { parsedTrace } = await analyzeTrace(trace);
const d = parsedTrace.data ?? parsedTrace;
// flows: the flows whose start and end events the engine bound to slices.
const out = { bounds: d.Meta.traceBounds, processes: [], flows: (d.Flows?.flows ?? []).length };
for (const [pid, p] of d.Renderer.processes) {
  const threads = [];
  for (const [tid, t] of p.threads) threads.push({ tid, name: t.name ?? null, entries: t.entries.length });
  out.processes.push({ pid, name: d.Meta.processNames?.get?.(pid)?.args?.name ?? null, threads });
}
console.log(JSON.stringify(out));
