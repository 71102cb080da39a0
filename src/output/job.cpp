#include "src/output/job.h"

#include <unistd.h>

namespace ni::out {

JobInfo detect_job(const GetEnv& getenv_fn, const std::string& generated_id) {
  JobInfo j;
  auto get = [&](const char* name) -> std::string {
    const char* v = getenv_fn(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  std::string slurm_job = get("SLURM_JOB_ID");
  std::string slurm_job_src = "SLURM_JOB_ID";
  if (slurm_job.empty()) {
    slurm_job = get("SLURM_JOBID");
    slurm_job_src = "SLURM_JOBID";
  }
  const std::pair<const char*, std::string> raw[] = {
      {"slurm_job_id", slurm_job},       {"slurm_procid", get("SLURM_PROCID")},
      {"slurm_localid", get("SLURM_LOCALID")}, {"rank", get("RANK")},
      {"local_rank", get("LOCAL_RANK")}, {"world_size", get("WORLD_SIZE")},
      {"ompi_rank", get("OMPI_COMM_WORLD_RANK")}, {"pmi_rank", get("PMI_RANK")},
  };
  for (const auto& [k, v] : raw)
    if (!v.empty()) j.fields.emplace_back(k, v);

  if (!slurm_job.empty()) {
    j.job_id = slurm_job;
    j.job_id_source = slurm_job_src;
    std::string task = get("SLURM_ARRAY_TASK_ID");
    if (!task.empty()) {
      j.job_id += "_" + task;
      j.job_id_source += "+SLURM_ARRAY_TASK_ID";
    }
  } else if (std::string t = get("TORCHELASTIC_RUN_ID"); !t.empty()) {
    j.job_id = t;
    j.job_id_source = "TORCHELASTIC_RUN_ID";
  } else if (std::string p = get("PMIX_NAMESPACE"); !p.empty()) {
    j.job_id = p;
    j.job_id_source = "PMIX_NAMESPACE";
  } else {
    j.job_id = generated_id;
    j.job_id_source = "generated";
  }
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    std::string v = get(name);
    if (!v.empty()) {
      j.global_rank = v;
      j.global_rank_source = name;
      break;
    }
  }
  return j;
}

std::string sanitize_for_filename(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
              ch == '-' || ch == '.';
    out.push_back(ok ? ch : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "host";
  return out;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return sanitize_for_filename(buf);
}

}  // namespace ni::out
