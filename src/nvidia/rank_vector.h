// RankVector: one value per dim of a tensor. Up to kInline dims are held in
// place rather than on the heap (the GPU backend keeps such vectors per value
// and per layout basis, and copies them often); a tensor of more dims (a
// reshape into many dims of 2, as tl.flip makes) keeps them on the heap.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace tilec::nvidia {

template <class T> class RankVector {
public:
  static constexpr size_t kInline = 8;
  RankVector() = default;
  explicit RankVector(size_t rank, const T &value = T()) : size_(rank) {
    if (rank > kInline)
      heap_.assign(rank, value);
    else
      std::fill(inline_.begin(), inline_.begin() + rank, value);
    point();
  }
  RankVector(std::initializer_list<T> values) : size_(values.size()) {
    if (size_ > kInline)
      heap_.assign(values.begin(), values.end());
    else
      std::copy(values.begin(), values.end(), inline_.begin());
    point();
  }
  // Copies and moves point at their own storage; a moved-from vector is empty.
  RankVector(const RankVector &o) : inline_(o.inline_), heap_(o.heap_), size_(o.size_) { point(); }
  RankVector(RankVector &&o) noexcept
      : inline_(o.inline_), heap_(std::move(o.heap_)), size_(o.size_) {
    point();
    o.clear();
  }
  RankVector &operator=(const RankVector &o) {
    inline_ = o.inline_;
    heap_ = o.heap_;
    size_ = o.size_;
    point();
    return *this;
  }
  RankVector &operator=(RankVector &&o) noexcept {
    if (&o != this) {
      inline_ = o.inline_;
      heap_ = std::move(o.heap_);
      size_ = o.size_;
      point();
      o.clear();
    }
    return *this;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T *data() { return data_; }
  const T *data() const { return data_; }
  T &operator[](size_t d) { return data()[d]; }
  const T &operator[](size_t d) const { return data()[d]; }
  const T &back() const { return data()[size_ - 1]; }
  T *begin() { return data(); }
  T *end() { return data() + size_; }
  const T *begin() const { return data(); }
  const T *end() const { return data() + size_; }
  void push_back(const T &value) { insert(end(), value); }
  // Inserts `value` before `at`, as std::vector::insert.
  void insert(const T *at, const T &value) {
    size_t k = at - data();
    if (size_ >= kInline) {
      if (size_ == kInline) // the first dim past what is held in place
        heap_.assign(inline_.begin(), inline_.end());
      heap_.insert(heap_.begin() + (long)k, value);
    } else {
      std::copy_backward(inline_.begin() + k, inline_.begin() + size_, inline_.begin() + size_ + 1);
      inline_[k] = value;
    }
    ++size_;
    point();
  }
  bool operator==(const RankVector &o) const { // (a loop: std::equal calls memcmp)
    if (size_ != o.size_)
      return false;
    const T *a = data(), *b = o.data();
    for (size_t d = 0; d < size_; ++d)
      if (!(a[d] == b[d]))
        return false;
    return true;
  }
  bool operator!=(const RankVector &o) const { return !(*this == o); }

private:
  // Where the dims are (set whenever the size or the storage changes).
  void point() { data_ = size_ > kInline ? heap_.data() : inline_.data(); }
  void clear() {
    heap_.clear();
    size_ = 0;
    point();
  }

  std::array<T, kInline> inline_{};
  std::vector<T> heap_; // the dims when there are more than kInline, else empty
  size_t size_ = 0;
  T *data_ = inline_.data();
};

} // namespace tilec::nvidia
