// RankVector: one value per dim of a tensor, held in place rather than on the
// heap (the GPU backend keeps such vectors per value and per layout basis, and
// copies them often). The GPU backend takes tensors of up to kMaxRank dims.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace tilec::nvidia {

template <class T> class RankVector {
public:
  static constexpr int kMaxRank = 8;
  RankVector() = default;
  explicit RankVector(size_t rank, const T &value = T()) : size_(checked(rank)) {
    std::fill(v_.begin(), v_.begin() + size_, value);
  }
  RankVector(std::initializer_list<T> values) : size_(checked(values.size())) {
    std::copy(values.begin(), values.end(), v_.begin());
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T &operator[](size_t d) { return v_[d]; }
  const T &operator[](size_t d) const { return v_[d]; }
  const T &back() const { return v_[size_ - 1]; }
  T *begin() { return v_.data(); }
  T *end() { return v_.data() + size_; }
  const T *begin() const { return v_.data(); }
  const T *end() const { return v_.data() + size_; }
  void push_back(const T &value) {
    checked(size_ + 1u);
    v_[size_++] = value;
  }
  // Inserts `value` before `at`, as std::vector::insert.
  void insert(const T *at, const T &value) {
    size_t k = at - v_.data();
    checked(size_ + 1u);
    std::copy_backward(v_.begin() + k, v_.begin() + size_, v_.begin() + size_ + 1);
    v_[k] = value;
    ++size_;
  }
  bool operator==(const RankVector &o) const { // (a loop: std::equal calls memcmp)
    if (size_ != o.size_)
      return false;
    for (size_t d = 0; d < size_; ++d)
      if (!(v_[d] == o.v_[d]))
        return false;
    return true;
  }
  bool operator!=(const RankVector &o) const { return !(*this == o); }

private:
  static uint8_t checked(size_t rank) {
    if (rank > (size_t)kMaxRank)
      throw std::length_error("tensors of more than " + std::to_string(kMaxRank) +
                              " dims are not supported on the GPU");
    return (uint8_t)rank;
  }
  std::array<T, kMaxRank> v_{};
  uint8_t size_ = 0;
};

} // namespace tilec::nvidia
