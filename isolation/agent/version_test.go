package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// agentSHA256 is filesHash of the agent at each revision since 2 (up to
// 12 a revision was a protocol version; 1 is testdata/agent-v1/agent.py
// as it was).
var agentSHA256 = map[int]string{
	2:  "54bb97440299c0760c190d20c2aabd347daf4d2a00fc5d704019e3de098db64a",
	3:  "8b69deddafd8c4d0a2fe096c25b72b037a77ac479e23e6ce11bb87e0f27faa74",
	4:  "266a97e1711309838eebdc4951d443f4b715c532fcfe37c9c393ce26624a23e7",
	5:  "16025524407b5d5759105d185b609dbf89ad35d5e58cf5a7a9381f0928611401",
	6:  "514f302912a9490ab210eb625b68ebea9adf8baeb4c7c3e925e09180c9b5fa60",
	7:  "bdda70d8902894d93fa2d4b55c00d14dfae9036f197332e6418ddade8082809e",
	8:  "4c910cea99428770cea77cfe63628849e6d0f244c2172fa8f4731d6199d91e85",
	9:  "0c092b51bc409e9da80b964eb5df091bd624d447d4b79662f88c9c3cf9f2f97d",
	10: "cf4658f77d6165a757f38142d931cba7fe0264d7f01deaf178a457e3f053f8e2",
	11: "2633f08a4b406bcfd77a4d7fb9f26a75bef38141fee75aafffc03ca66d0ee985",
	12: "d1ea916b5c3224a7ba4c1636732350a16618cd436914ba02be8471088a214801",
	13: "f4e2504ea764cbc6b90780ec341438ed0a5820f478589dbed67a44110cefacd7",
	14: "d173ba306f59a1cfd4a5fe98cb334f98a1c01f8bc5564f36d804465bdf860642",
	15: "1377232a16619f37083e8c660833de6945a06aba9f4d035b512f27864af7fc9e",
	16: "e5a94e4dc573841527a042c5387febcde716ccf7e3edc04ddbcb8d6eeabfa6f3",
	17: "309843b01685ce1dd4f282d42cf2aa1dcb6b043860cd8c58002e52d9b56d7e33",
	18: "89891f64781b9984b7324c67378040b2f30b1f1dc6476b5a4c15ecb7401d173e",
	19: "96269fdca5d749fe5d52eca9f6687ca3cc16db1e02bae30af6d42bbbfb78e667",
	20: "e70707c8e3cebdc38ebc5f204d52383d2aba55701eefe3282e5cfbbb0696667e",
}

// filesHash is the sha256 of an agent's files: names and contents, in name
// order.
func filesHash(files []File) string {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// savedRevision is the revision of a saved agent whose protocol (its
// folder's name) is not its revision: since 13 a wire's last agent may be
// a later revision of the same protocol.
var savedRevision = map[int]int{12: 14, 15: 15}

// TestAgentSourcesHaveTheirVersion enforces the bump rules of Revision and
// ProtocolVersion: the agent's files are those recorded for the revision,
// the protocol is no newer than the revision, and the last agent of every
// older wire the daemon still speaks to is saved, as it was, for
// TestAgentContract.
func TestAgentSourcesHaveTheirVersion(t *testing.T) {
	got := filesHash(Files())
	want, ok := agentSHA256[Revision]
	switch {
	case !ok:
		t.Fatalf("agent.Revision is %d, and no hash is recorded for it: add %d: %q to agentSHA256 in version_test.go", Revision, Revision, got)
	case got != want:
		t.Fatalf("agent sources changed: bump agent.Revision and record the new hash, %q; if a daemon can see the change, save the current wire's agent first and bump ProtocolVersion too (see version.go)", got)
	}
	if ProtocolVersion > Revision || ProtocolVersion < savedProtocols[len(savedProtocols)-1] {
		t.Fatalf("ProtocolVersion %d must lie between the last saved wire (%d) and Revision (%d)", ProtocolVersion, savedProtocols[len(savedProtocols)-1], Revision)
	}
	if savedProtocols[0] != MinProtocolVersion {
		t.Fatalf("the oldest saved agent is version %d; MinProtocolVersion is %d", savedProtocols[0], MinProtocolVersion)
	}
	for _, v := range savedProtocols {
		dir := filepath.Join("testdata", fmt.Sprintf("agent-v%d", v))
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("agent version %d, which the daemon still speaks to (MinProtocolVersion is %d), is not saved in %s: %v", v, MinProtocolVersion, dir, err)
		}
		rev := v
		if r, ok := savedRevision[v]; ok {
			rev = r
		}
		if want, ok := agentSHA256[rev]; ok {
			if got := filesHash(savedAgent(t, v)); got != want {
				t.Errorf("%s is not the agent of version %d: its hash is %q, recorded %q", dir, v, got, want)
			}
		}
	}
	// A saved agent no test runs is dead weight.
	dirs, _ := filepath.Glob(filepath.Join("testdata", "agent-v*"))
	for _, d := range dirs {
		var v int
		if _, err := fmt.Sscanf(filepath.Base(d), "agent-v%d", &v); err != nil || !slices.Contains(savedProtocols, v) {
			t.Errorf("%s is not in savedProtocols (contract_test.go): add it there, or remove it", d)
		}
	}
}

var saveAgent = flag.String("save-agent", "", "TestSaveAgent writes the current agent's files into this folder (see version.go)")

// TestSaveAgent saves the current agent as installed, for when the next
// change bumps ProtocolVersion (see version.go). It runs only when asked.
func TestSaveAgent(t *testing.T) {
	if *saveAgent == "" {
		t.Skip("run with -save-agent=<folder> to save the agent")
	}
	if err := os.MkdirAll(*saveAgent, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range Files() {
		if err := os.WriteFile(filepath.Join(*saveAgent, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
