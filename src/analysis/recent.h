// A map's recently used entries, for loops that look an entry up per op: a
// log's ops cycle through a few dozen groups (a file's communicators,
// functions and sizes), so a lookup in a std::map or a hash table per op is
// mostly the same few entries again.
#ifndef NI_ANALYSIS_RECENT_H_
#define NI_ANALYSIS_RECENT_H_

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace ni::analysis {

// Direct-mapped by a hash of the key that the caller computes from the op's
// fields (a collision costs a lookup in the map, never a wrong entry). The
// map must keep its entries where they are (std::map, std::unordered_map)
// and lose none while this is in use.
template <class M>
class Recent {
 public:
  Recent() = default;
  // A copy starts empty: it would point into the other object's map.
  Recent(const Recent&) {}
  Recent& operator=(const Recent&) {
    std::fill(std::begin(at_), std::end(at_), nullptr);
    return *this;
  }
  typename M::mapped_type& get(M& m, const typename M::key_type& k, std::uint64_t hash) {
    const auto w = static_cast<unsigned>((hash * 0x9e3779b97f4a7c15ull) >> (64 - kBits));
    if (at_[w] == nullptr || !(key_[w] == k)) {
      at_[w] = &m[k];
      key_[w] = k;
    }
    return *at_[w];
  }

 private:
  static constexpr unsigned kBits = 6;
  typename M::key_type key_[1u << kBits]{};
  typename M::mapped_type* at_[1u << kBits]{};
};

}  // namespace ni::analysis

#endif  // NI_ANALYSIS_RECENT_H_
