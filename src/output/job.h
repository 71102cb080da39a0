// Who this process is: host name and the job/rank identifiers launchers put
// in the environment (SLURM, torchrun, Open MPI, MPICH/Hydra, PMIx), with the
// precedence of docs/shared ecosystem.md §7. Read once, at sink start.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/core/config.h"

namespace ni::out {

struct JobInfo {
  // Raw identifiers present in the environment, in schema order (schema.h kJob):
  // slurm_job_id, slurm_procid, slurm_localid, rank, local_rank, world_size,
  // ompi_rank, pmi_rank. Absent when unset.
  std::vector<std::pair<std::string, std::string>> fields;
  std::string job_id;         // the one used (never empty)
  std::string job_id_source;  // env variable it came from, or "generated"
  std::string global_rank;    // "" when no launcher said
  std::string global_rank_source;
};

// job_id precedence: SLURM_JOB_ID (SLURM_JOBID) [+ "_" SLURM_ARRAY_TASK_ID] >
// TORCHELASTIC_RUN_ID > PMIX_NAMESPACE > generated "<host>-<pid>-<start>".
// global rank: RANK > OMPI_COMM_WORLD_RANK > PMI_RANK > PMIX_RANK > SLURM_PROCID.
JobInfo detect_job(const GetEnv& getenv_fn, const std::string& generated_id);

// gethostname(), with characters unsafe in file names replaced by '_'.
std::string host_name();
// Keeps [A-Za-z0-9._-], replaces the rest by '_' (file-name component).
std::string sanitize_for_filename(const std::string& s);

}  // namespace ni::out
