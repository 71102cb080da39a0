#include "src/analysis/locate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "src/analysis/map_file.h"

namespace ni::analysis {

bool load_host_map(const std::string& path, HostMap& m, std::string& err) {
  // Whitespace and the separators a host and its rack may be written with ("node1,rack2", "node1=rack2").
  const bool ok = read_map_file(path, "host map", "host", " \t\r\v\f,=:", [&m](std::string& line, std::string& e) {
    for (char& ch : line)
      if (ch == ',' || ch == '=' || ch == ':' || ch == '\t') ch = ' ';
    std::istringstream ls(line);
    std::string host, rack, extra;
    ls >> host;
    if (!(ls >> rack) || (ls >> extra)) {
      e = "expected \"host rack\", got \"" + line + "\"";
      return false;
    }
    auto [it, fresh] = m.rack_of.emplace(host, rack);
    if (!fresh && it->second != rack) {
      e = "host " + host + " is in rack " + it->second + " already";
      return false;
    }
    return true;
  }, err);
  if (ok) m.path = path;
  return ok;
}

std::string rack_from_hostname(const std::string& host) {
  const std::string s = host.substr(0, host.find('.'));
  std::size_t i = 0;
  while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i == s.size()) return {};  // a name must start with its rack's letters
  std::size_t j = i;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  bool second = false;
  for (std::size_t k = j; k < s.size(); ++k) second = second || std::isdigit(static_cast<unsigned char>(s[k]));
  return second ? s.substr(0, j) : std::string();
}

void assign_racks(ReadResult& res, const HostMap* m) {
  res.racks_from = m ? "host map " + m->path : "hostnames";
  for (FileInfo& f : res.files) {
    if (m) {
      auto it = m->rack_of.find(f.host);
      if (it == m->rack_of.end()) it = m->rack_of.find(f.host.substr(0, f.host.find('.')));
      f.rack = it == m->rack_of.end() ? "" : it->second;
    } else {
      f.rack = rack_from_hostname(f.host);
    }
  }
}

namespace {
double log_choose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}
}  // namespace

double hypergeom_tail(int N, int K, int n, int k) {
  double p = 0;
  for (int x = std::max(k, 0); x <= std::min(K, n); ++x) {
    if (n - x > N - K) continue;
    p += std::exp(log_choose(K, x) + log_choose(N - K, n - x) - log_choose(N, n));
  }
  return std::min(1.0, p);
}

std::string Concentration::text() const {
  std::string s = std::to_string(affected_here) + " of " + std::to_string(affected_total) +
                  " affected ranks are " + (level == "host" ? "on host " : "in rack ") + where + " (" +
                  std::to_string(measured_here) + " of " + std::to_string(measured_total) + " measured ranks";
  if (!hosts.empty()) {
    s += "; hosts";
    for (const auto& h : hosts) s += " " + h;
  }
  char p[48];
  std::snprintf(p, sizeof p, "; chance %.2g)", p_chance);
  return s + p;
}

std::vector<Concentration> concentrations(const ReadResult& res, const std::vector<Judged>& units) {
  std::vector<Concentration> out;
  int N = 0, n = 0;
  for (const Judged& u : units)
    if (u.file < res.files.size()) {
      ++N;
      n += u.affected;
    }
  if (n < 2) return out;
  for (const char* level : {"host", "rack"}) {
    const bool host = level[0] == 'h';
    std::map<std::string, std::pair<int, int>> groups;  // where -> (measured, affected)
    std::map<std::string, std::set<std::string>> hosts;
    int known = 0;
    for (const Judged& u : units) {
      if (u.file >= res.files.size()) continue;
      const FileInfo& fi = res.files[u.file];
      const std::string& g = host ? fi.host : fi.rack;
      if (g.empty()) continue;
      ++known;
      ++groups[g].first;
      if (u.affected) {
        ++groups[g].second;
        hosts[g].insert(fi.host);
      }
    }
    if (groups.size() < 2) continue;  // one host / rack (or none known): nothing to localise
    for (const auto& [g, mk] : groups) {
      const auto [m, k] = mk;
      if (k < 2 || 4 * k < 3 * n || m == known) continue;
      if (!host && hosts[g].size() < 2) continue;
      const double p = hypergeom_tail(N, m, n, k);
      if (p >= 0.01) continue;
      Concentration c;
      c.level = level;
      c.where = g;
      c.affected_here = k;
      c.affected_total = n;
      c.measured_here = m;
      c.measured_total = N;
      c.p_chance = p;
      if (!host) c.hosts.assign(hosts[g].begin(), hosts[g].end());
      out.push_back(std::move(c));
    }
  }
  return out;
}

RankProcesses::RankProcesses(const ReadResult& res) {
  for (std::uint32_t i = 0; i < res.files.size(); ++i) {
    const FileInfo& fi = res.files[i];
    const std::int64_t pid = fi.pid >= 0 ? fi.pid : -1 - static_cast<std::int64_t>(i);
    for (const CommInfo& c : fi.comms) {
      if (by_.count({c.comm_hash, c.rank})) continue;  // the first record of it
      by_.emplace(std::pair(c.comm_hash, c.rank),
                  Process{{fi.host, pid, c.cuda_dev},
                          (fi.host.empty() ? std::string("?") : fi.host) +
                              (fi.pid >= 0 ? " pid " + std::to_string(fi.pid) : " " + fi.path) +
                              (c.cuda_dev >= 0 ? " GPU " + std::to_string(c.cuda_dev) : std::string())});
    }
  }
}

const RankProcesses::Process* RankProcesses::of(std::uint64_t comm, int rank) const {
  const auto it = by_.find({comm, rank});
  return it == by_.end() ? nullptr : &it->second;
}

}  // namespace ni::analysis
