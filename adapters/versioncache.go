package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The version cache: `pi --version` alone takes 1.7 s and `opencode
// --version` 1.3 s on an idle 2-core machine, as long as a whole answer of
// the mock model, and hub used to run one before every run. A version
// Detect parsed is kept in hub's cache directory ($XDG_CACHE_HOME/hub or
// ~/.cache/hub, as CacheFile), one small JSON file per key, and reused
// while the key still holds:
//
//   - the path hub runs (a symlink's name matters: a version manager's
//     shims are one program that dispatches on it) and the file it
//     resolves to (filepath.EvalSymlinks: npm's .bin entries are symlinks
//     to a JS file), with that file's device, inode, size, mtime and ctime
//     (npm normalizes the mtimes of package files; an install or upgrade
//     writes new files, so a new inode and ctime);
//   - the version command's arguments;
//   - hub's own executable, by the same identity: a cached version is what
//     this build's probe found, never an older build's (nor, in tests, an
//     older test binary's);
//   - its age: at most versionCacheTTL, which bounds what no stat can see
//     (a shim whose target a version manager switched).
//
// Only a parsed version is cached; a failed probe never is. A cached
// version still goes through the MinVersion check, and one it fails is
// confirmed by a real probe before the run is refused (a refusal never
// rests on the cache). The binary is stat'ed again after a probe, and a
// binary that changed meanwhile is not cached. Entries are written
// atomically (a temporary file renamed), so concurrent runs share them; an
// entry that cannot be read, does not parse, is not this user's or names
// another key is ignored and the binary probed. A cache directory that
// cannot be written costs the probe, never the run.
//
// WithFreshProbe makes Detect run the version command whatever the cache
// holds (hub doctor: it checks that the agent starts).

// versionCacheTTL is how long a cached version is used.
const versionCacheTTL = 24 * time.Hour

// versionCacheMax bounds the bytes read from a cache entry: one is a few
// hundred bytes.
const versionCacheMax = 64 << 10

// versionCachePrefix starts the name of every version cache entry in hub's
// cache directory (temporary files: "." + versionCachePrefix).
const versionCachePrefix = "version-"

type freshProbeKey struct{}

// WithFreshProbe returns a context under which Detect runs the version
// command even when the version cache has the binary's version; a version
// it parses is cached as always.
func WithFreshProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshProbeKey{}, true)
}

func freshProbe(ctx context.Context) bool {
	v, _ := ctx.Value(freshProbeKey{}).(bool)
	return v
}

// fileID is what tells one file's content from another's without reading it.
type fileID struct {
	Path  string `json:"path"` // symlinks resolved
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns"`
}

func statID(path string) (fileID, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileID{}, err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileID{}, errors.New("not a regular file")
	}
	return fileID{Path: resolved, Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, nil
}

// hubID is the identity of the running hub's executable.
var hubID = sync.OnceValues(func() (fileID, error) {
	exe, err := os.Executable()
	if err != nil {
		return fileID{}, err
	}
	return statID(exe)
})

// versionKey is what a cached version is valid for.
type versionKey struct {
	Hub  fileID   `json:"hub"`
	Bin  string   `json:"bin"`  // the path hub runs
	File fileID   `json:"file"` // the file Bin resolves to
	Args []string `json:"args"`
}

// versionEntry is one cache file: Key is the versionKey, encoded.
type versionEntry struct {
	Key      json.RawMessage `json:"key"`
	Version  string          `json:"version"`
	ProbedAt time.Time       `json:"probed_at"`
}

// versionCache is the cache's view of one binary: its key, encoded, and
// the file that holds its entry. The zero value (no key: hub's executable
// or the binary could not be stat'ed, or there is no cache directory)
// caches nothing.
type versionCache struct {
	hub  fileID
	key  []byte
	file string
}

// cacheFor returns the cache of path probed with args.
func cacheFor(path string, args []string) versionCache {
	hub, err := hubID()
	if err != nil {
		return versionCache{}
	}
	key, ok := keyOf(hub, path, args)
	if !ok {
		return versionCache{}
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return versionCache{}
	}
	sum := sha256.Sum256(key)
	return versionCache{hub: hub, key: key, file: filepath.Join(dir, "hub", versionCachePrefix+hex.EncodeToString(sum[:12])+".json")}
}

func keyOf(hub fileID, path string, args []string) ([]byte, bool) {
	id, err := statID(path)
	if err != nil {
		return nil, false
	}
	key, err := json.Marshal(versionKey{Hub: hub, Bin: path, File: id, Args: args})
	return key, err == nil
}

// load returns the cached version, "" for none.
func (c versionCache) load(now time.Time) string {
	if c.key == nil {
		return ""
	}
	if !privateDir(filepath.Dir(c.file)) {
		return ""
	}
	// O_NONBLOCK: a FIFO put where the entry should be would block a plain
	// open until someone writes to it, holding hub before any limit runs
	// (found by the breaker: --timeout ignored, one signal not enough);
	// O_NOFOLLOW: an entry is a file hub wrote, never a link.
	f, err := os.OpenFile(c.file, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	// Another user's file (a cache directory others can write to) is not
	// believed.
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, versionCacheMax))
	if err != nil {
		return ""
	}
	var e versionEntry
	if json.Unmarshal(b, &e) != nil || string(e.Key) != string(c.key) {
		return ""
	}
	if age := now.Sub(e.ProbedAt); age < 0 || age > versionCacheTTL {
		return ""
	}
	return e.Version
}

// privateDir reports whether dir is a directory of this user's that no one
// else may write to: only then are its entries believed (another user
// could otherwise replace one, or put a FIFO in its place).
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// store caches version for c's key, if it still holds for path (the binary
// did not change while it was probed), and removes expired entries. It
// reports nothing: a cache that cannot be written costs the next run a
// probe.
func (c versionCache) store(path string, args []string, version string, probedAt time.Time) {
	if c.key == nil {
		return
	}
	if now, ok := keyOf(c.hub, path, args); !ok || string(now) != string(c.key) {
		return
	}
	b, err := json.Marshal(versionEntry{Key: c.key, Version: version, ProbedAt: probedAt.UTC()})
	if err != nil {
		return
	}
	dir := filepath.Dir(c.file)
	if os.MkdirAll(dir, 0o700) != nil || !privateDir(dir) {
		return
	}
	f, err := os.CreateTemp(dir, "."+versionCachePrefix+"*")
	if err != nil {
		return
	}
	_, werr := f.Write(append(b, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), c.file)
	}
	if werr != nil {
		os.Remove(f.Name())
		return
	}
	pruneVersionCache(dir, probedAt)
}

// pruneVersionCache removes the version cache entries in dir that can no
// longer be used: those last written more than versionCacheTTL before now
// (they would be probed again anyway; so are a killed hub's temporary
// files), and those whose binary or hub is gone (an upgrade removed it, or
// it was a test's fake agent or test binary). One store reads every entry:
// there are few.
func pruneVersionCache(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := strings.TrimPrefix(e.Name(), ".")
		if !strings.HasPrefix(name, versionCachePrefix) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if now.Sub(fi.ModTime()) > versionCacheTTL || name == e.Name() && binaryGone(path) {
			os.Remove(path)
		}
	}
}

// binaryGone reports whether the entry at path names a binary, or a hub,
// that no longer exists (go test's binaries are removed when it ends).
func binaryGone(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var e struct {
		Key versionKey `json:"key"`
	}
	if json.NewDecoder(io.LimitReader(f, versionCacheMax)).Decode(&e) != nil {
		return false
	}
	for _, p := range []string{e.Key.Bin, e.Key.File.Path, e.Key.Hub.Path} {
		if _, err := os.Lstat(p); p != "" && errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}
