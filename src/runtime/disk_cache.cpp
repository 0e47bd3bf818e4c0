// The on-disk compile cache. An entry is the file <cacheDir>/<key[0:2]>/<key>:
//   "TILEC1" | payload length (u64 LE) | payload hash (2 x u64 LE) | payload
// Writers fill a private temp file in the same directory and rename() it over
// the final name, so readers see the old file, the new one, or none; the
// header catches files damaged any other way (a crash without fsync, a full
// disk, a stray edit), and such files are removed on read.
#include "runtime/disk_cache.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tilec {
namespace {

constexpr char kMagic[6] = {'T', 'I', 'L', 'E', 'C', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 8 + 16;
constexpr size_t kMaxKeyBytes = 200;

// --- the hash ---

struct Hash128 {
  uint64_t h1, h2;
};

constexpr uint64_t kMul1 = 0x9E3779B185EBCA87ULL; // odd constants with well-mixed bits
constexpr uint64_t kMul2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kSeed = 0xCBF29CE484222325ULL; // the FNV-1a 64-bit offset basis

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// MurmurHash3's 64-bit finalizer: each input bit flips each output bit with
// probability close to 1/2.
uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDULL;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t loadLE(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i > 0; --i)
    v = (v << 8) | p[i - 1];
  return v;
}

// Two lanes over 8-byte words, each step a bijection of the lane's state (so
// no input collapses it), then crossed and finalized.
Hash128 hash128(const std::string &data) {
  const auto *p = reinterpret_cast<const unsigned char *>(data.data());
  size_t n = data.size();
  uint64_t h1 = kSeed, h2 = kMul1 ^ n;
  auto step = [&](uint64_t w) {
    h1 = rotl((h1 ^ w) * kMul1, 31);
    h2 = (rotl(h2, 27) + w) * kMul2;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    step(loadLE(p + i, 8));
  step(loadLE(p + i, n - i)); // the 0..7 tail bytes; n tells "a" from "a\0"
  h1 ^= n;
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

// --- byte encoding ---

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(char((v >> (8 * i)) & 0xFF));
}

// Reads bounded fields from a string; every read checks what is left.
struct Reader {
  const std::string &s;
  size_t pos = 0;

  size_t left() const { return s.size() - pos; }
  bool u64(uint64_t &v) {
    if (left() < 8)
      return false;
    v = loadLE(reinterpret_cast<const unsigned char *>(s.data()) + pos, 8);
    pos += 8;
    return true;
  }
  bool bytes(uint64_t n, std::string &out) {
    if (n > left())
      return false;
    out.assign(s, pos, size_t(n));
    pos += size_t(n);
    return true;
  }
};

std::string header(const std::string &payload) {
  Hash128 h = hash128(payload);
  std::string out(kMagic, sizeof(kMagic));
  putU64(out, payload.size());
  putU64(out, h.h1);
  putU64(out, h.h2);
  return out;
}

// The payload of a cache file, or nullopt when the file is damaged.
std::optional<std::string> decodeEntry(const std::string &file) {
  if (file.size() < kHeaderBytes || file.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0)
    return std::nullopt;
  Reader r{file, sizeof(kMagic)};
  uint64_t length = 0, h1 = 0, h2 = 0;
  if (!r.u64(length) || !r.u64(h1) || !r.u64(h2) || length != r.left())
    return std::nullopt;
  std::string payload = file.substr(kHeaderBytes);
  Hash128 h = hash128(payload);
  if (h.h1 != h1 || h.h2 != h2)
    return std::nullopt;
  return payload;
}

// --- files ---

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p.
bool makeDirs(const std::string &path) {
  if (path.empty() || isDirectory(path))
    return !path.empty();
  for (size_t pos = 1;; ++pos) {
    pos = path.find('/', pos);
    std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
    if (pos == std::string::npos)
      break;
  }
  return isDirectory(path);
}

bool writeAll(int fd, const char *data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

bool readAll(int fd, std::string &out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return true;
    out.append(buf, size_t(n));
  }
}

bool isKeyChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '-' || c == '.';
}

bool validKey(const std::string &key) {
  if (key.size() < 2 || key.size() > kMaxKeyBytes || key[0] == '.')
    return false;
  for (char c : key)
    if (!isKeyChar(c))
      return false;
  return true;
}

std::string entryDir(const std::string &dir, const std::string &key) {
  return dir + "/" + key.substr(0, 2);
}

// Removes a damaged entry unless a writer has replaced it since we read it.
void removeIfSame(const std::string &path, const struct stat &read) {
  struct stat now;
  if (stat(path.c_str(), &now) == 0 && now.st_ino == read.st_ino && now.st_dev == read.st_dev)
    unlink(path.c_str());
}

std::optional<std::string> readEntry(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat st;
  std::string file;
  bool ok = fstat(fd, &st) == 0 && readAll(fd, file);
  close(fd);
  if (!ok)
    return std::nullopt;
  std::optional<std::string> payload = decodeEntry(file);
  if (!payload)
    removeIfSame(path, st);
  return payload;
}

// Writes header + payload to a fresh temp file beside `path`, then renames it.
bool writeEntry(const std::string &dir, const std::string &path, const std::string &key,
                const std::string &bytes) {
  std::string pattern = dir + "/.tmp-" + key + "-XXXXXX";
  int fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0)
    return false;
  std::string head = header(bytes);
  bool ok = writeAll(fd, head.data(), head.size()) && writeAll(fd, bytes.data(), bytes.size());
  ok = (close(fd) == 0) && ok;
  ok = ok && rename(pattern.c_str(), path.c_str()) == 0;
  if (!ok)
    unlink(pattern.c_str());
  return ok;
}

} // namespace

std::string cacheDir() {
  std::string disable = env("TILEC_DISABLE_DISK_CACHE");
  if (!disable.empty() && disable != "0")
    return "";
  std::string dir = env("TILEC_CACHE_DIR");
  if (dir.empty() && !env("XDG_CACHE_HOME").empty())
    dir = env("XDG_CACHE_HOME") + "/tilec";
  if (dir.empty() && !env("HOME").empty())
    dir = env("HOME") + "/.cache/tilec";
  return makeDirs(dir) ? dir : "";
}

std::string hashHex(const std::string &data) {
  Hash128 h = hash128(data);
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", (unsigned long long)h.h1,
                (unsigned long long)h.h2);
  return text;
}

std::optional<std::string> cacheRead(const std::string &key) {
  try {
    std::string dir = cacheDir();
    if (dir.empty() || !validKey(key))
      return std::nullopt;
    return readEntry(entryDir(dir, key) + "/" + key);
  } catch (...) { // out of memory: a miss
    return std::nullopt;
  }
}

bool cacheWrite(const std::string &key, const std::string &bytes) {
  try {
    std::string dir = cacheDir();
    if (dir.empty() || !validKey(key))
      return false;
    std::string sub = entryDir(dir, key);
    return makeDirs(sub) && writeEntry(sub, sub + "/" + key, key, bytes);
  } catch (...) {
    return false;
  }
}

std::string packFields(const Fields &fields) {
  std::string out;
  putU64(out, fields.size());
  for (const auto &[name, value] : fields) {
    putU64(out, name.size());
    out += name;
    putU64(out, value.size());
    out += value;
  }
  return out;
}

std::optional<Fields> unpackFields(const std::string &bytes) {
  try {
    Reader r{bytes};
    uint64_t count = 0;
    if (!r.u64(count) || count > r.left() / 16) // each field takes 16 bytes at least
      return std::nullopt;
    Fields fields(static_cast<size_t>(count));
    for (auto &[name, value] : fields) {
      uint64_t n = 0;
      if (!r.u64(n) || !r.bytes(n, name) || !r.u64(n) || !r.bytes(n, value))
        return std::nullopt;
    }
    if (r.left() != 0)
      return std::nullopt;
    return fields;
  } catch (...) {
    return std::nullopt;
  }
}

} // namespace tilec
