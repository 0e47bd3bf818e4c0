// The on-disk compile cache: byte blobs stored under a hex key, one file each,
// checked on read (magic, length, hash) and written atomically (temp file +
// rename), so concurrent processes and a crash mid-write never expose half a
// file. A failing disk only costs cache misses: nothing here throws.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec {

// $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else $HOME/.cache/tilec
// (empty values count as unset); created on demand. "" when the cache is
// disabled (TILEC_DISABLE_DISK_CACHE set to anything but "" or "0") or the
// directory cannot be created.
std::string cacheDir();

// A 128-bit non-cryptographic digest of `data` as 32 lowercase hex digits.
std::string hashHex(const std::string &data);

// The bytes stored under `key`, or nullopt: missing, disabled, or damaged (a
// damaged file is removed). Keys are 2 to 200 characters of [0-9A-Za-z_.-],
// not starting with '.'; others are never found.
std::optional<std::string> cacheRead(const std::string &key);

// Stores `bytes` under `key`, replacing any earlier value atomically. False
// on any failure (disabled, bad key, read-only or full disk).
bool cacheWrite(const std::string &key, const std::string &bytes);

// A payload of named fields: length-prefixed (name, value) pairs, in order.
using Fields = std::vector<std::pair<std::string, std::string>>;
std::string packFields(const Fields &fields);
// nullopt on any malformed input (short, overlong lengths, trailing bytes).
std::optional<Fields> unpackFields(const std::string &bytes);

} // namespace tilec
