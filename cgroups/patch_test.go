package cgroups

// The build uses a patched copy of github.com/opencontainers/cgroups in
// third_party/opencontainers-cgroups (go.mod replace). This test keeps that
// copy, its manifest (UPSTREAM.sum) and its PATCHES.md honest, offline and
// without root:
//
//   - go.mod's required version, PATCHES.md's "Upstream:" line and the
//     manifest's "module" line name the same upstream version, and the
//     replace directive points at the copy: bumping the upstream version
//     (by hand or through a dependency) fails until the patch is re-checked;
//   - the manifest records the sha256 of every file of that upstream release;
//     hashed the way go.sum hashes a module (dirhash h1) they must give the
//     h1 recorded next to the version, which is the release's checksum in
//     sum.golang.org: the upstream side of the manifest cannot be wrong;
//   - every file of the copy is in the manifest with its current sha256:
//     "same" files equal upstream's, "patched" files differ from it and are
//     exactly PATCHES.md's "Patched:" lines; "omitted" files are exactly the
//     upstream files matching PATCHES.md's "Omitted:" patterns and are absent;
//     the only other files are PATCHES.md's "Added:" ones.
//
// To regenerate the manifest from a downloaded upstream (PATCHES.md says
// when and how):
//
//	go test -tags seccomp ./cgroups -run Patch -args -cgroups-upstream DIR

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	ocModule    = "github.com/opencontainers/cgroups"
	ocCopyDir   = "../third_party/opencontainers-cgroups"
	ocReplaceTo = "./third_party/opencontainers-cgroups"
	ocManifest  = "UPSTREAM.sum"
	ocPatches   = "PATCHES.md"
)

var cgroupsUpstream = flag.String("cgroups-upstream", "",
	"directory of the upstream "+ocModule+" release (go mod download -json "+ocModule+"@VERSION prints it): rewrite "+ocCopyDir+"/"+ocManifest+" from it")

// manifestEntry is one line of UPSTREAM.sum:
// "<status> <upstream sha256> <copy sha256 or -> <path>".
type manifestEntry struct {
	status   string // same, patched or omitted
	upstream string
	copy     string
	path     string
}

type manifest struct {
	module, version, h1 string
	entries             []manifestEntry
}

func TestPatchedOpencontainersCgroups(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required, replaces := goModDirectives(gomod)
	version, ok := required[ocModule]
	if !ok {
		t.Fatalf("go.mod no longer requires %s: if the dependency is gone, delete %s, its replace directive and this test", ocModule, ocCopyDir)
	}
	target, ok := replaces[ocModule]
	if !ok || (target.oldVersion != "" && target.oldVersion != version) {
		t.Fatalf("go.mod does not replace %s %s: add \"replace %s => %s\", or the build uses the unpatched upstream", ocModule, version, ocModule, ocReplaceTo)
	}
	if target.newPath != ocReplaceTo {
		t.Fatalf("go.mod replaces %s with %q, not %s: point the replace directive at the patched copy or update this test and PATCHES.md", ocModule, target.newPath, ocReplaceTo)
	}

	patches, err := os.ReadFile(filepath.Join(ocCopyDir, ocPatches))
	if err != nil {
		t.Fatal(err)
	}
	decl := patchDeclarations(patches)
	recorded := strings.Fields(decl["Upstream"])
	if len(recorded) != 2 || recorded[0] != ocModule {
		t.Fatalf("%s must have one line \"Upstream: %s VERSION\" (found %q): add it", ocPatches, ocModule, decl["Upstream"])
	}
	if recorded[1] != version {
		t.Fatalf("go.mod requires %s %s but third_party/opencontainers-cgroups is patched %s %s: re-apply and re-check the patch against %s as %s's \"Moving to a new upstream\" says, then update its Upstream line", ocModule, version, ocModule, recorded[1], version, ocPatches)
	}

	if *cgroupsUpstream != "" {
		writeManifest(t, *cgroupsUpstream, version)
	}

	m := readManifest(t)
	if m.module != ocModule || m.version != version {
		t.Fatalf("%s describes %s %s, not %s %s: regenerate it from upstream %s as %s says", ocManifest, m.module, m.version, ocModule, version, version, ocPatches)
	}
	// The upstream side: the recorded hashes are exactly the release's.
	var up []manifestEntry
	for _, e := range m.entries {
		up = append(up, manifestEntry{upstream: e.upstream, path: e.path})
	}
	if got := dirHash1(ocModule+"@"+version, up); got != m.h1 {
		t.Fatalf("the upstream sha256s in %s hash to %s, not to the release's %s: regenerate the manifest from a fresh go mod download as %s says, never by hand", ocManifest, got, m.h1, ocPatches)
	}
	if sum := goSumH1(t, ocModule, version); sum != "" && sum != m.h1 {
		t.Fatalf("go.sum has %s %s %s but %s records %s: regenerate the manifest from a fresh go mod download", ocModule, version, sum, ocManifest, m.h1)
	}

	// The copy's side.
	have := map[string]string{} // path -> sha256 of the copy's file
	err = filepath.WalkDir(ocCopyDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(ocCopyDir, p)
		if err != nil {
			return err
		}
		have[filepath.ToSlash(rel)], err = fileSHA256(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	omitted := strings.Fields(decl["Omitted"])
	added := strings.Fields(decl["Added"])
	var patched []string
	for _, e := range m.entries {
		matches := matchesAny(e.path, omitted)
		sum, present := have[e.path]
		delete(have, e.path)
		switch e.status {
		case "omitted":
			if present {
				t.Errorf("%s is in the copy but %s says upstream's was left out: delete it, or regenerate the manifest and describe the file in %s", e.path, ocManifest, ocPatches)
			} else if !matches {
				t.Errorf("upstream's %s is left out of the copy but matches no \"Omitted:\" pattern of %s: add it there or restore the file", e.path, ocPatches)
			}
			continue
		case "same", "patched":
		default:
			t.Errorf("%s: unknown status %q for %s: regenerate the manifest", ocManifest, e.status, e.path)
			continue
		}
		if matches {
			t.Errorf("%s is in the copy but matches an \"Omitted:\" pattern of %s: narrow the pattern or delete the file", e.path, ocPatches)
		}
		switch {
		case !present:
			t.Errorf("%s is missing from the copy though %s keeps it: restore it from upstream %s or regenerate the manifest and say why in %s", e.path, ocManifest, version, ocPatches)
		case sum != e.copy:
			t.Errorf("%s changed since %s was written: review the change, describe it in %s (\"Patched:\" lines and text) and regenerate the manifest", e.path, ocManifest, ocPatches)
		case e.status == "same" && e.copy != e.upstream:
			t.Errorf("%s: %s is marked same but its hash differs from upstream's: regenerate the manifest", ocManifest, e.path)
		case e.status == "patched" && e.copy == e.upstream:
			t.Errorf("%s is marked patched but is identical to upstream %s: regenerate the manifest and drop it from %s's \"Patched:\" lines", e.path, version, ocPatches)
		}
		if e.status == "patched" {
			patched = append(patched, e.path)
		}
	}
	for p := range have {
		if !slices.Contains(added, p) {
			t.Errorf("%s is in the copy but neither upstream %s has it nor %s's \"Added:\" line lists it: delete it or list it and say why", p, version, ocPatches)
		}
	}
	for _, p := range added {
		if _, ok := have[p]; !ok {
			t.Errorf("%s lists %s as added but the copy has no such file (or upstream has one): fix the \"Added:\" line", ocPatches, p)
		}
	}
	declared := strings.Fields(decl["Patched"])
	sort.Strings(declared)
	sort.Strings(patched)
	if !slices.Equal(declared, patched) {
		t.Errorf("%s's \"Patched:\" lines name %v but the files that differ from upstream %s are %v: make %s describe every changed file", ocPatches, declared, version, patched, ocPatches)
	}
}

type replaceTarget struct{ oldVersion, newPath, newVersion string }

// goModDirectives returns the required versions and the replacements of a
// go.mod file (single-line and block forms).
func goModDirectives(gomod []byte) (map[string]string, map[string]replaceTarget) {
	required := map[string]string{}
	replaces := map[string]replaceTarget{}
	block := ""
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		verb := block
		switch {
		case block != "" && f[0] == ")":
			block = ""
			continue
		case block == "" && len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		case block == "":
			verb, f = f[0], f[1:]
		}
		switch verb {
		case "require":
			if len(f) >= 2 {
				required[f[0]] = f[1]
			}
		case "replace":
			arrow := slices.Index(f, "=>")
			if arrow < 1 || arrow > 2 || len(f) < arrow+2 {
				continue
			}
			r := replaceTarget{newPath: f[arrow+1]}
			if arrow == 2 {
				r.oldVersion = f[1]
			}
			if len(f) > arrow+2 {
				r.newVersion = f[arrow+2]
			}
			replaces[f[0]] = r
		}
	}
	return required, replaces
}

// patchDeclarations returns the machine-readable lines of PATCHES.md
// ("Upstream:", "Patched:", "Omitted:", "Added:"); repeated keys add up.
func patchDeclarations(md []byte) map[string]string {
	d := map[string]string{}
	for line := range strings.SplitSeq(string(md), "\n") {
		for _, k := range []string{"Upstream", "Patched", "Omitted", "Added"} {
			if v, ok := strings.CutPrefix(line, k+": "); ok {
				d[k] = strings.TrimSpace(d[k] + " " + v)
			}
		}
	}
	return d
}

// matchesAny reports whether p, or its base name, matches one of the
// path.Match patterns.
func matchesAny(p string, patterns []string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
		if ok, _ := path.Match(pat, path.Base(p)); ok {
			return true
		}
	}
	return false
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ocCopyDir, ocManifest))
	if err != nil {
		t.Fatalf("%v: write the manifest as %s says", err, ocPatches)
	}
	var m manifest
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "module" && len(f) == 4:
			m.module, m.version, m.h1 = f[1], f[2], f[3]
		case len(f) == 4:
			m.entries = append(m.entries, manifestEntry{status: f[0], upstream: f[1], copy: f[2], path: f[3]})
		default:
			t.Fatalf("%s:%d: malformed line %q: regenerate the manifest", ocManifest, n+1, line)
		}
	}
	if m.module == "" || len(m.entries) == 0 {
		t.Fatalf("%s has no module line or no files: regenerate it", ocManifest)
	}
	return m
}

// writeManifest rewrites UPSTREAM.sum from the upstream release in dir,
// comparing each of its files with the copy's.
func writeManifest(t *testing.T, dir, version string) {
	t.Helper()
	if !strings.HasSuffix(filepath.Clean(dir), "@"+version) {
		t.Fatalf("-cgroups-upstream %s is not %s@%s as go.mod requires: pass the Dir go mod download -json prints for that version", dir, ocModule, version)
	}
	var entries []manifestEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		e := manifestEntry{path: filepath.ToSlash(rel), copy: "-"}
		if e.upstream, err = fileSHA256(p); err != nil {
			return err
		}
		switch sum, err := fileSHA256(filepath.Join(ocCopyDir, rel)); {
		case os.IsNotExist(err):
			e.status = "omitted"
		case err != nil:
			return err
		case sum == e.upstream:
			e.status, e.copy = "same", sum
		default:
			e.status, e.copy = "patched", sum
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s as released, file by file, and what sandboxd's copy does\n", ocModule, version)
	fmt.Fprintf(&b, "# with each: <same|patched|omitted> <upstream sha256> <copy sha256|-> <path>.\n")
	fmt.Fprintf(&b, "# Written and checked by cgroups/patch_test.go (see PATCHES.md); do not edit.\n")
	fmt.Fprintf(&b, "module %s %s %s\n", ocModule, version, dirHash1(ocModule+"@"+version, entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%-7s %s %-64s %s\n", e.status, e.upstream, e.copy, e.path)
	}
	if err := os.WriteFile(filepath.Join(ocCopyDir, ocManifest), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s from %s", ocManifest, dir)
}

// dirHash1 is the "h1:" hash go.sum and sum.golang.org record for a module
// (golang.org/x/mod/sumdb/dirhash.Hash1) computed from per-file sha256s:
// sha256 over the sorted lines "<hex sha256>  <prefix>/<path>\n".
func dirHash1(prefix string, entries []manifestEntry) string {
	sorted := slices.Clone(entries)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	h := sha256.New()
	for _, e := range sorted {
		fmt.Fprintf(h, "%s  %s/%s\n", e.upstream, prefix, e.path)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// goSumH1 returns go.sum's h1 for the module's tree at version, or "" when
// go.sum has none (with a directory replacement go does not need it).
func goSumH1(t *testing.T, module, version string) string {
	t.Helper()
	b, err := os.ReadFile("../go.sum")
	if os.IsNotExist(err) {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == module && f[1] == version {
			return f[2]
		}
	}
	return ""
}

func fileSHA256(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
