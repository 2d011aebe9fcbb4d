package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// web.listen_address takes the string every earlier file used, or a list.
func TestListenAddressYAMLStringOrList(t *testing.T) {
	for _, tc := range []struct {
		yaml, wantErr string
		want          ListenAddresses
	}{
		{"web:\n  listen_address: \":10091\"\n", "", ListenAddresses{":10091"}},
		{"web:\n  listen_address: [\"127.0.0.1:10091\", \"[::1]:10092\"]\n", "", ListenAddresses{"127.0.0.1:10091", "[::1]:10092"}},
		{"web:\n  listen_address:\n    - \":10091\"\n", "", ListenAddresses{":10091"}},
		{"web:\n  listen_address: {a: b}\n", "neither a \"host:port\" string nor a list", nil},
	} {
		c, err := parse("t.yml", []byte(tc.yaml))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want one saying %q", tc.yaml, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if !reflect.DeepEqual(c.Web.ListenAddress, tc.want) {
			t.Errorf("%q: listen_address %q, want %q", tc.yaml, c.Web.ListenAddress, tc.want)
		}
	}
}

// The flags are exporter-toolkit's (kingpinflag): --web.listen-address repeats and
// replaces the file's list; --web.systemd-socket sets web.systemd_socket.
func TestWebFlagsFromKingpinflag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    ListenAddresses
		systemd bool
	}{
		{nil, ListenAddresses{":10090"}, false},
		{[]string{"--web.listen-address=127.0.0.1:1", "--web.listen-address=[::1]:2"}, ListenAddresses{"127.0.0.1:1", "[::1]:2"}, false},
		{[]string{"--web.systemd-socket"}, ListenAddresses{":10090"}, true},
	} {
		app := kingpin.New("vram_exporter", "test")
		app.Terminate(nil)
		f := RegisterFlags(app)
		if _, err := app.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got := load(t, f)
		if !reflect.DeepEqual(got.Web.ListenAddress, tc.want) || got.Web.SystemdSocket != tc.systemd {
			t.Errorf("%v: listen %q systemd %v, want %q %v", tc.args, got.Web.ListenAddress, got.Web.SystemdSocket, tc.want, tc.systemd)
		}
	}
}

func TestListenAddressValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		web     Web
		wantErr string
	}{
		{"none", Web{}, "web.listen_address: no address to listen on"},
		{"none under systemd", Web{SystemdSocket: true}, ""},
		{"twice", Web{ListenAddress: ListenAddresses{":1", ":1"}}, `web.listen_address: ":1" is named twice`},
		{"second bad", Web{ListenAddress: ListenAddresses{":1", "localhost"}}, `web.listen_address: "localhost" is not host:port`},
	} {
		c := Default()
		c.Web.ListenAddress, c.Web.SystemdSocket = tc.web.ListenAddress, tc.web.SystemdSocket
		_, err := c.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
