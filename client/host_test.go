package client

import (
	"net/url"
	"strings"
	"testing"
)

func TestSSHCommand(t *testing.T) {
	t.Setenv(SSHEnv, "")
	t.Setenv(SSHRemoteEnv, "")
	for _, tt := range []struct {
		host, name, argv, err string
	}{
		{"ssh://node1", "ssh://node1", "ssh -o BatchMode=yes -T -- node1 sandboxctl dial-stdio", ""},
		{"ssh://me@node1:2222/run/s d.sock", "ssh://me@node1:2222/run/s d.sock", "ssh -o BatchMode=yes -T -l me -p 2222 -- node1 sandboxctl --socket '/run/s d.sock' dial-stdio", ""},
		{"ssh://me:pw@node1", "", "", "no password"},
		{"ssh://-oProxyCommand=x", "", "", "bad host"},
		{"ssh://node1?x=1", "", "", "bad host"},
		{"ftp://node1", "", "", "use unix://"},
	} {
		u, err := url.Parse(tt.host)
		if err != nil {
			t.Fatal(err)
		}
		name, argv, err := sshCommand(u, tt.host)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want %q", tt.host, err, tt.err)
		case tt.err == "" && (err != nil || name != tt.name || strings.Join(argv, " ") != tt.argv):
			t.Errorf("%s: %q %q %v", tt.host, name, strings.Join(argv, " "), err)
		}
	}
	t.Setenv(SSHEnv, "ssh -F cfg")
	t.Setenv(SSHRemoteEnv, "/opt/bin/sandboxctl")
	u, _ := url.Parse("ssh://n")
	if _, argv, _ := sshCommand(u, "ssh://n"); strings.Join(argv, " ") != "ssh -F cfg -o BatchMode=yes -T -- n /opt/bin/sandboxctl dial-stdio" {
		t.Errorf("with the variables: %q", argv)
	}
}
