// Checks the disk cache: where it lives, the hash, round trips, damaged files
// rejected and removed, bad keys and unwritable places handled without
// throwing, the field format against truncation and fuzzing, and 8 forked
// writers racing on one key while 4 readers only ever see whole payloads
// (and, once the key exists, never miss it).
#include "runtime/disk_cache.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using tilec::cacheDir;
using tilec::cacheRead;
using tilec::cacheWrite;
using tilec::Fields;
using tilec::hashHex;

int passed = 0, failed = 0;
std::string root;

void check(bool ok, const std::string &what) {
  (ok ? passed : failed)++;
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string entryPath(const std::string &key) {
  return cacheDir() + "/" + key.substr(0, 2) + "/" + key;
}

void useDir(const std::string &dir) { setenv("TILEC_CACHE_DIR", dir.c_str(), 1); }

void testCacheDir() {
  useDir(root + "/a/b/c");
  check(cacheDir() == root + "/a/b/c" && exists(root + "/a/b/c"), "TILEC_CACHE_DIR, mkdir -p");
  setenv("TILEC_CACHE_DIR", "", 1);
  setenv("XDG_CACHE_HOME", (root + "/xdg").c_str(), 1);
  check(cacheDir() == root + "/xdg/tilec", "empty TILEC_CACHE_DIR: XDG_CACHE_HOME/tilec");
  unsetenv("XDG_CACHE_HOME");
  std::string home = getenv("HOME") ? getenv("HOME") : "";
  setenv("HOME", (root + "/home").c_str(), 1);
  check(cacheDir() == root + "/home/.cache/tilec", "HOME/.cache/tilec");
  setenv("HOME", home.c_str(), 1);
  useDir(root + "/on");
  setenv("TILEC_DISABLE_DISK_CACHE", "1", 1);
  check(cacheDir().empty() && !cacheWrite("abcd", "x") && !cacheRead("abcd"),
        "TILEC_DISABLE_DISK_CACHE=1 disables");
  setenv("TILEC_DISABLE_DISK_CACHE", "0", 1);
  check(cacheDir() == root + "/on", "TILEC_DISABLE_DISK_CACHE=0 does not");
  unsetenv("TILEC_DISABLE_DISK_CACHE");
  spit(root + "/plainfile", "x");
  useDir(root + "/plainfile/cache");
  check(cacheDir().empty() && !cacheWrite("abcd", "x") && !cacheRead("abcd"),
        "uncreatable directory: cache off, no throw");
}

void testHash() {
  std::string h = hashHex("hello");
  bool hex = h.size() == 32 && h.find_first_not_of("0123456789abcdef") == std::string::npos;
  check(hex && h == hashHex("hello") && h != hashHex("hellp"), "hashHex: 32 hex digits: " + h);
  std::set<std::string> seen;
  size_t n = 0;
  for (int i = 0; i < 100000; ++i, ++n)
    seen.insert(hashHex("kernel-" + std::to_string(i)));
  std::string buf(1000, '\0');
  for (size_t len = 0; len <= buf.size(); ++len, ++n)
    seen.insert(hashHex(buf.substr(0, len))); // zero bytes of every length
  std::string block(64, 'x');
  for (int bit = 0; bit < 64 * 8; ++bit, ++n) {
    std::string flipped = block;
    flipped[bit / 8] ^= char(1 << (bit % 8));
    seen.insert(hashHex(flipped));
  }
  check(seen.size() == n, "no collisions in " + std::to_string(n) + " near-identical inputs");
}

void testRoundTrip() {
  useDir(root + "/rt");
  std::string key = hashHex("k1");
  check(!cacheRead(key), "missing key: nullopt");
  check(cacheWrite(key, "first") && cacheRead(key) == std::string("first"), "round trip");
  check(cacheWrite(key, "second!") && cacheRead(key) == std::string("second!"), "overwrite");
  check(cacheWrite("ab", "") && cacheRead("ab") == std::string(), "empty payload");
  std::string big(10 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = char(i * 2654435761u >> 13);
  check(cacheWrite(key, big) && cacheRead(key) == big, "10 MiB payload");
  std::vector<std::string> badKeys = {
      "", "a", "../escape", "a/b", ".hidden", std::string(201, 'a'), std::string("nul\0x", 5)};
  for (const std::string &bad : badKeys)
    check(!cacheWrite(bad, "x") && !cacheRead(bad), "bad key rejected: '" + bad.substr(0, 12) +
                                                        "' (" + std::to_string(bad.size()) +
                                                        " bytes)");
  std::string blocked = hashHex("blocked");
  spit(cacheDir() + "/" + blocked.substr(0, 2), "a file where the directory goes");
  check(!cacheWrite(blocked, "x") && !cacheRead(blocked), "unwritable entry: false, no throw");
}

// Writes `payload` under a key, damages the file with `damage`, reads it back.
void expectRejected(const std::string &name, const std::function<void(std::string &)> &damage) {
  std::string key = hashHex(name);
  cacheWrite(key, "a payload of some length, " + name);
  std::string file = slurp(entryPath(key));
  damage(file);
  spit(entryPath(key), file);
  check(!cacheRead(key) && !exists(entryPath(key)), name + ": rejected and removed");
}

void testCorruption() {
  useDir(root + "/bad");
  expectRejected("flipped payload byte", [](std::string &f) { f[f.size() - 3] ^= 0x20; });
  expectRejected("flipped magic byte", [](std::string &f) { f[0] ^= 1; });
  expectRejected("flipped length byte", [](std::string &f) { f[7] ^= 1; });
  expectRejected("flipped hash byte", [](std::string &f) { f[20] ^= 1; });
  expectRejected("truncated payload", [](std::string &f) { f.resize(f.size() - 5); });
  expectRejected("truncated header", [](std::string &f) { f.resize(5); });
  expectRejected("empty file", [](std::string &f) { f.clear(); });
  expectRejected("extra byte", [](std::string &f) { f += 'x'; });
}

void testFields() {
  Fields f = {{"ptx", std::string("a\0b", 3)}, {"", ""}, {"cubin", std::string(1000, '\xff')}};
  std::string packed = tilec::packFields(f);
  check(tilec::unpackFields(packed) == f, "fields round trip (NULs, empty)");
  check(tilec::unpackFields(tilec::packFields({})) == Fields{}, "no fields");
  bool allShortRejected = true;
  for (size_t len = 0; len < packed.size(); ++len)
    allShortRejected &= !tilec::unpackFields(packed.substr(0, len));
  check(allShortRejected, "every truncation rejected");
  check(!tilec::unpackFields(packed + "x"), "trailing byte rejected");
  std::string huge = packed;
  std::memset(huge.data(), 0xff, 8); // count = 2^64 - 1
  check(!tilec::unpackFields(huge), "absurd count rejected");
  std::mt19937_64 rng(42);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s = packed;
    for (int j = 0; j < 3; ++j)
      s[rng() % s.size()] = char(rng());
    if (rng() % 2)
      s.resize(rng() % s.size());
    accepted += bool(tilec::unpackFields(s));
  }
  check(true, "200000 mutated inputs, no crash (" + std::to_string(accepted) + " accepted)");
}

// Payload `i`: its own size and bytes, so a reader can tell a whole one.
std::string payload(int i) {
  std::string s(size_t(i + 1) * 7919 + size_t(i), '\0');
  for (size_t j = 0; j < s.size(); ++j)
    s[j] = char(i * 31 + j * 7);
  return s;
}

bool isWholePayload(const std::string &s) {
  for (int i = 0; i < 8; ++i)
    if (s.size() == payload(i).size())
      return s == payload(i);
  return false;
}

pid_t spawn(const std::function<bool()> &fn) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    bool ok = fn();
    std::fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  return pid;
}

void testConcurrentWriters() {
  useDir(root + "/race");
  const std::string key = hashHex("contended");
  std::vector<pid_t> pids;
  for (int i = 0; i < 8; ++i)
    pids.push_back(spawn([i, key] {
      bool ok = true;
      for (int n = 0; n < 300; ++n)
        ok &= cacheWrite(key, payload(i));
      return ok;
    }));
  for (int r = 0; r < 4; ++r)
    pids.push_back(spawn([key] {
      // Before the first write a miss is fine; after it, rename() must keep
      // the name filled, so every read is a whole payload.
      int waits = 0;
      while (!cacheRead(key) && waits++ < 100000)
        usleep(10);
      int hits = 0;
      for (int n = 0; n < 3000; ++n) {
        std::optional<std::string> got = cacheRead(key);
        if (!got || !isWholePayload(*got)) {
          std::printf("  reader: %s after %d whole payloads\n", got ? "torn read" : "miss", hits);
          return false;
        }
        ++hits;
      }
      std::printf("  reader: %d whole payloads in a row\n", hits);
      return true;
    }));
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  int leftovers = 0;
  std::string dir = cacheDir() + "/" + key.substr(0, 2);
  DIR *d = opendir(dir.c_str());
  while (dirent *e = d ? readdir(d) : nullptr)
    leftovers += std::strncmp(e->d_name, ".tmp-", 5) == 0;
  if (d)
    closedir(d);
  std::optional<std::string> last = cacheRead(key);
  check(ok && leftovers == 0 && last && isWholePayload(*last),
        "8 writers + 4 readers on one key: every read whole, no temp files left");
}

} // namespace

int main() {
  char dir[] = "/tmp/tilec-cache-test-XXXXXX";
  root = mkdtemp(dir);
  unsetenv("TILEC_DISABLE_DISK_CACHE");
  testCacheDir();
  testHash();
  testRoundTrip();
  testCorruption();
  testFields();
  testConcurrentWriters();
  std::string cmd = "rm -rf '" + root + "'";
  if (std::system(cmd.c_str()) != 0)
    std::printf("could not remove %s\n", root.c_str());
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
