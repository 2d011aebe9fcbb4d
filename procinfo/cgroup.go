package procinfo

import "strings"

// Runtime names as they appear before "://" in kube-state-metrics'
// container_id, so our container_id label joins with kube_pod_container_info.
const (
	RuntimeContainerd = "containerd"
	RuntimeDocker     = "docker"
	RuntimeCRIO       = "cri-o"
	RuntimePodman     = "podman"
)

const containerIDLen = 64

// scope prefixes that name the container runtime in systemd-driver layouts.
// The conmon scopes of CRI-O and podman hold the monitor process, not the
// container, so they are deliberately absent: a conmon process must not be
// charged to the container it watches.
var scopePrefixes = []struct {
	prefix, runtime string
}{
	{"cri-containerd-", RuntimeContainerd},
	{"docker-", RuntimeDocker},
	{"crio-", RuntimeCRIO},
	{"libpod-", RuntimePodman},
}

// ParseCgroup reads the text of /proc/PID/cgroup and returns the container ID
// in kube-state-metrics' form ("containerd://<64 hex>") and the Kubernetes pod
// UID with dashes. Either is "" when the process is not in a container or pod.
//
// defaultRuntime names the runtime for layouts that give a bare 64-hex ID
// below a Kubernetes pod directory (the cgroupfs driver), since that path does
// not say which runtime made it; "" means containerd.
//
// In cgroup v1 the memory, pids and name=systemd hierarchies are preferred
// (they are the ones runtimes always place containers in), then any other
// line that yields an ID. Within a path the deepest match wins, so a
// container nested in another (kind, Docker-in-Docker) is reported as the
// inner one. Malformed input yields "", "".
func ParseCgroup(content string, defaultRuntime string) (containerID, podUID string) {
	if defaultRuntime == "" {
		defaultRuntime = RuntimeContainerd
	}
	bestRank := 3 // lower is better; 3 = nothing found yet
	for len(content) > 0 {
		var line string
		line, content, _ = strings.Cut(content, "\n")
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		rank := lineRank(controllers)
		if rank >= bestRank {
			continue
		}
		id, pod := parseCgroupPath(path, defaultRuntime)
		switch {
		case id != "":
			containerID, podUID, bestRank = id, pod, rank
		case pod != "" && bestRank == 3:
			// A pod without a container (the pod-level cgroup itself) is
			// still worth reporting, but any line with an ID beats it.
			podUID = pod
		}
	}
	return containerID, podUID
}

// lineRank orders cgroup v1 hierarchies by how reliably runtimes use them;
// the v2 line (empty controller list) is as good as the best v1 one.
func lineRank(controllers string) int {
	if controllers == "" {
		return 0
	}
	for len(controllers) > 0 {
		var c string
		c, controllers, _ = strings.Cut(controllers, ",")
		switch c {
		case "memory", "pids", "name=systemd":
			return 0
		}
	}
	return 1
}

// parseCgroupPath finds the deepest container ID in one cgroup path and the
// pod UID of an enclosing Kubernetes pod cgroup.
func parseCgroupPath(path, defaultRuntime string) (containerID, podUID string) {
	// Removed cgroups show up with this suffix in v2; the IDs in the path are
	// still right for a process that has not been moved yet.
	path = strings.TrimSuffix(path, " (deleted)")
	if !strings.HasPrefix(path, "/") {
		return "", ""
	}
	segs := strings.Split(path[1:], "/")
	idAt := -1
	for i := len(segs) - 1; i >= 0 && containerID == ""; i-- {
		seg := segs[i]
		if id, runtime, ok := scopeID(seg); ok {
			containerID, idAt = runtime+"://"+id, i
			continue
		}
		if isHex64(seg) {
			containerID, idAt = bareIDRuntime(segs[:i], defaultRuntime)+"://"+seg, i
		}
	}
	// A pod UID only counts above the container (or anywhere, when there is
	// none) and below a kubepods directory, so a stray "pod…" directory
	// elsewhere is not mistaken for Kubernetes.
	end := len(segs)
	if idAt >= 0 {
		end = idAt
	}
	inKubepods := false
	for _, seg := range segs[:end] {
		if !inKubepods {
			inKubepods = seg == "kubepods" || strings.HasPrefix(seg, "kubepods.") ||
				strings.HasPrefix(seg, "kubepods-") || strings.HasSuffix(seg, "-kubepods.slice")
		}
		if !inKubepods {
			continue
		}
		if uid, ok := podSegmentUID(seg); ok {
			podUID = uid
		}
	}
	return containerID, podUID
}

// scopeID recognises systemd-driver names like "docker-<id>.scope".
func scopeID(seg string) (id, runtime string, ok bool) {
	seg = strings.TrimSuffix(seg, ".scope")
	for _, p := range scopePrefixes {
		if rest, found := strings.CutPrefix(seg, p.prefix); found && isHex64(rest) {
			return rest, p.runtime, true
		}
	}
	return "", "", false
}

// bareIDRuntime guesses the runtime for a bare 64-hex directory from its
// parents: docker and podman (cgroupfs driver) have their own parent
// directories; under kubepods only the operator knows; everything else is the
// containerd namespace layout (nerdctl, ctr: /<namespace>/<id>).
func bareIDRuntime(parents []string, defaultRuntime string) string {
	if len(parents) == 0 {
		return RuntimeContainerd
	}
	switch parents[len(parents)-1] {
	case "docker":
		return RuntimeDocker
	case "libpod_parent":
		return RuntimePodman
	}
	for _, p := range parents {
		if strings.HasPrefix(p, "kubepods") {
			return defaultRuntime
		}
	}
	return RuntimeContainerd
}

// podSegmentUID extracts the pod UID from a cgroupfs "pod<uid>" directory or
// a systemd "kubepods[-qos]-pod<uid_with_underscores>.slice" unit (prefixed
// with the kubelet's cgroup root, e.g. "kubelet-", in kind). systemd
// reserves "-" as its hierarchy separator, which is why the kubelet writes
// the UID's dashes as underscores.
func podSegmentUID(seg string) (string, bool) {
	var raw string
	if s, ok := strings.CutSuffix(seg, ".slice"); ok {
		i := strings.LastIndex(s, "-pod")
		if i < 0 || !strings.Contains(s[:i+1], "kubepods") {
			return "", false
		}
		raw = strings.ReplaceAll(s[i+len("-pod"):], "_", "-")
	} else if s, ok := strings.CutPrefix(seg, "pod"); ok {
		raw = s
	} else {
		return "", false
	}
	if !isPodUID(raw) {
		return "", false
	}
	return raw, true
}

// isPodUID accepts an RFC 4122 UUID (API-server pods) or 32 hex digits (the
// kubelet's hash UID of static pods), lowercase as Kubernetes writes them.
func isPodUID(s string) bool {
	switch len(s) {
	case 32:
		return isLowerHex(s)
	case 36:
		for i := 0; i < len(s); i++ {
			switch i {
			case 8, 13, 18, 23:
				if s[i] != '-' {
					return false
				}
			default:
				if !isLowerHexByte(s[i]) {
					return false
				}
			}
		}
		return true
	}
	return false
}

func isHex64(s string) bool { return len(s) == containerIDLen && isLowerHex(s) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLowerHexByte(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHexByte(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
