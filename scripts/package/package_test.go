// Package packaging tests the release and package configuration against each other and
// against the files they pack: nfpm.yaml (CI's .deb) and .goreleaser.yaml (releases)
// describe the same package, both stamp the same build_info variables as
// scripts/build.sh, the install scripts create the user and group the systemd unit
// names, and the README's docker commands fit the Dockerfile's user, paths and group.
// The package itself is built, installed and removed by scripts/package/test.sh.
package packaging

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const root = "../../"

type nfpmFile struct {
	Src      string `yaml:"src"`
	Dst      string `yaml:"dst"`
	FileInfo struct {
		Mode int `yaml:"mode"`
	} `yaml:"file_info"`
}

type nfpmScripts struct {
	PostInstall string `yaml:"postinstall"`
	PreRemove   string `yaml:"preremove"`
	PostRemove  string `yaml:"postremove"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(root + path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(root + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNFPMAndGoReleaserPackTheSame: CI installs what nfpm.yaml builds, releases ship what
// .goreleaser.yaml builds; they must be the same package.
func TestNFPMAndGoReleaserPackTheSame(t *testing.T) {
	var nf struct {
		Name, Maintainer, Description, License, Section, Homepage string
		Overrides                                                 map[string]struct {
			Depends []string `yaml:"depends"`
		}
		Contents []nfpmFile
		Scripts  nfpmScripts
	}
	readYAML(t, "scripts/package/nfpm.yaml", &nf)
	var gr struct {
		Builds []struct {
			Binary  string
			Main    string
			LDFlags []string `yaml:"ldflags"`
		}
		NFPMs []struct {
			PackageName                                         string `yaml:"package_name"`
			Formats                                             []string
			Maintainer, Description, License, Section, Homepage string
			BinDir                                              string `yaml:"bindir"`
			Overrides                                           map[string]struct {
				Dependencies []string `yaml:"dependencies"`
			}
			Contents []nfpmFile
			Scripts  nfpmScripts
		} `yaml:"nfpms"`
	}
	readYAML(t, ".goreleaser.yaml", &gr)
	if len(gr.NFPMs) != 1 || len(gr.Builds) != 1 {
		t.Fatalf("want one build and one nfpms entry, got %d, %d", len(gr.Builds), len(gr.NFPMs))
	}
	g := gr.NFPMs[0]
	for _, f := range []struct{ what, a, b string }{
		{"name", nf.Name, g.PackageName}, {"maintainer", nf.Maintainer, g.Maintainer},
		{"description", nf.Description, g.Description}, {"license", nf.License, g.License},
		{"section", nf.Section, g.Section}, {"homepage", nf.Homepage, g.Homepage},
	} {
		if f.a != f.b {
			t.Errorf("%s: nfpm.yaml %q, .goreleaser.yaml %q", f.what, f.a, f.b)
		}
	}
	if !slices.Contains(g.Formats, "deb") || !slices.Contains(g.Formats, "rpm") {
		t.Errorf("goreleaser formats %v, want deb and rpm", g.Formats)
	}
	for _, format := range []string{"deb", "rpm"} {
		if !reflect.DeepEqual(nf.Overrides[format].Depends, g.Overrides[format].Dependencies) {
			t.Errorf("%s dependencies differ: %v vs %v", format, nf.Overrides[format].Depends, g.Overrides[format].Dependencies)
		}
	}
	if nf.Scripts != g.Scripts {
		t.Errorf("scripts differ: %+v vs %+v", nf.Scripts, g.Scripts)
	}
	for _, s := range []string{nf.Scripts.PostInstall, nf.Scripts.PreRemove, nf.Scripts.PostRemove} {
		if _, err := os.Stat(root + s); err != nil {
			t.Errorf("install script: %v", err)
		}
	}
	// GoReleaser adds the binary itself (bindir); nfpm.yaml names it as a file.
	dsts := func(fs []nfpmFile) map[string]string {
		m := map[string]string{}
		for _, f := range fs {
			m[f.Dst] = f.Src
		}
		return m
	}
	nfd, grd := dsts(nf.Contents), dsts(g.Contents)
	bin := g.BinDir + "/" + gr.Builds[0].Binary
	if nfd[bin] == "" {
		t.Errorf("nfpm.yaml does not install %s (goreleaser's bindir and binary)", bin)
	}
	delete(nfd, bin)
	if !reflect.DeepEqual(nfd, grd) {
		t.Errorf("contents differ:\nnfpm.yaml   %v\ngoreleaser  %v", nfd, grd)
	}
	if nfd["/usr/lib/systemd/system/vram_exporter.service"] != "build/package/vram_exporter.service" {
		t.Error("the unit must be the one scripts/package/unit.sh derives from deploy/systemd/vram_exporter.service")
	}
	if gr.Builds[0].Main != "./cmd/vram_exporter" {
		t.Errorf("goreleaser builds %s", gr.Builds[0].Main)
	}

	// The same build_info stamps as scripts/build.sh.
	stamped := func(s string) []string {
		var vars []string
		for _, m := range regexp.MustCompile(`-X \$?\{?(?:pkg\}?|github\.com/prometheus/common/version)\.(\w+)=`).FindAllStringSubmatch(s, -1) {
			vars = append(vars, m[1])
		}
		sort.Strings(vars)
		return vars
	}
	want := []string{"Branch", "BuildDate", "BuildUser", "Revision", "Version"}
	if got := stamped(read(t, "scripts/build.sh")); !reflect.DeepEqual(got, want) {
		t.Errorf("scripts/build.sh stamps %v, want %v", got, want)
	}
	if got := stamped(strings.Join(gr.Builds[0].LDFlags, " ")); !reflect.DeepEqual(got, want) {
		t.Errorf(".goreleaser.yaml stamps %v, want %v", got, want)
	}
}

// TestInstallScriptsMakeWhatTheUnitNames: the postinstall creates the unit's User= and
// the group of --push.socket-group, which is the unit's Group=.
func TestInstallScriptsMakeWhatTheUnitNames(t *testing.T) {
	unit := strings.ReplaceAll(read(t, "deploy/systemd/vram_exporter.service"), "\\\n", " ")
	field := func(key string) string {
		m := regexp.MustCompile(`(?m)^` + key + `=(.*)$`).FindStringSubmatch(unit)
		if m == nil {
			t.Fatalf("the unit has no %s=", key)
		}
		return strings.TrimSpace(m[1])
	}
	user := field("User")
	group := regexp.MustCompile(`--push\.socket-group=(\S+)`).FindStringSubmatch(unit)
	if group == nil {
		t.Fatal("the unit passes no --push.socket-group")
	}
	post := read(t, "scripts/package/postinstall.sh")
	if !regexp.MustCompile(`useradd [^\n]*(\\\n[^\n]*)*\b` + regexp.QuoteMeta(user) + `\n`).MatchString(post) {
		t.Errorf("postinstall does not create the unit's user %s", user)
	}
	if !strings.Contains(post, "groupadd --system "+group[1]) {
		t.Errorf("postinstall does not create the push group %s", group[1])
	}
	// The unit runs with the push group as its primary group, so the RuntimeDirectory
	// systemd makes is owned by it (0750: members traverse, never write).
	if field("Group") != group[1] {
		t.Errorf("the unit's Group= is %s, want the push group %s", field("Group"), group[1])
	}
	if field("RuntimeDirectory") != "vram_exporter" {
		t.Error("the package relies on RuntimeDirectory=vram_exporter for /run/vram_exporter")
	}
	if !strings.Contains(read(t, "scripts/package/unit.sh"), "/usr/local/bin/vram_exporter|/usr/bin/vram_exporter") {
		t.Error("unit.sh must move ExecStart to the packaged binary /usr/bin/vram_exporter")
	}
}

// TestDockerRunFitsTheImage: the README's docker commands use the image's user, socket
// directory and push group, and mount the socket directory so that it is writable.
func TestDockerRunFitsTheImage(t *testing.T) {
	df := read(t, "Dockerfile")
	stages := strings.Split(df, "\nFROM ")
	final := stages[len(stages)-1]
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(final)
	if user == nil {
		t.Fatal("the final stage has no numeric USER uid:gid")
	}
	chown := regexp.MustCompile(`(?m)^COPY --from=build --chown=(\d+):(\d+) \S+ /run/vram_exporter$`).FindStringSubmatch(final)
	if chown == nil || chown[1] != user[1] {
		t.Fatalf("the image's /run/vram_exporter must belong to the USER %s (got %v)", user[1], chown)
	}
	pushGroup := chown[2]
	if !strings.Contains(df, "chmod 0750 /out/run/vram_exporter") {
		t.Error("the socket directory must let the push group traverse but never write (0750): a pusher that could write there could replace the socket")
	}
	// Every build argument the README passes is one the Dockerfile declares, and the
	// build stamps through scripts/build.sh.
	readme := read(t, "README.md")
	for _, m := range regexp.MustCompile(`--build-arg (\w+)=`).FindAllStringSubmatch(readme, -1) {
		if !regexp.MustCompile(`(?m)^ARG ` + m[1] + `\b`).MatchString(df) {
			t.Errorf("README passes --build-arg %s, which the Dockerfile does not declare", m[1])
		}
	}
	if !strings.Contains(df, "bash scripts/build.sh -o /out/vram_exporter") {
		t.Error("the Dockerfile must build with scripts/build.sh (the stamps)")
	}

	runs := regexp.MustCompile(`(?s)docker run (.*?[^\\])\n`).FindAllStringSubmatch(readme, -1)
	if len(runs) < 2 {
		t.Fatalf("want the daemon's and a serving container's docker run in the README, found %d", len(runs))
	}
	daemon := strings.ReplaceAll(runs[0][1], "\\\n", " ")
	for _, want := range []string{
		"--pid=host", "-v /proc:/host/proc:ro", "--path.procfs=/host/proc",
		"--group-add " + pushGroup, "--push.socket-group=" + pushGroup,
		"--push.socket=/run/vram_exporter/push.sock",
	} {
		if !strings.Contains(daemon, want) {
			t.Errorf("the README's docker run lacks %s: %s", want, daemon)
		}
	}
	// A named volume inherits the image directory's owner; a missing host directory
	// would be created as root 0755.
	vol := regexp.MustCompile(`-v (\S+):/run/vram_exporter\b`).FindStringSubmatch(daemon)
	if vol == nil || strings.HasPrefix(vol[1], "/") {
		t.Errorf("the socket directory must be a named volume, not a host path: %v", vol)
	}
	serving := strings.ReplaceAll(runs[1][1], "\\\n", " ")
	if vol != nil && (!strings.Contains(serving, "-v "+vol[1]+":/run/vram_exporter") || !strings.Contains(serving, "--group-add "+pushGroup)) {
		t.Errorf("the serving container must mount %s and join group %s: %s", vol[1], pushGroup, serving)
	}
	for _, a := range strings.Fields(daemon) {
		name, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(name, "--push.") || strings.HasPrefix(name, "--path.") {
			if !strings.Contains(readme, "`"+name+"`") {
				t.Errorf("flag %s is not in the README's flag table", name)
			}
		}
	}
}
