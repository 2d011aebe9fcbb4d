package procinfo

import (
	"strings"
	"testing"
)

const (
	// podUID2 is a static (mirror) pod: the kubelet's 32-hex hash UID.
	podUID2 = "5b5e5c0e6f0f3c7b3a3f1e2d9c8b7a6f"
)

// v1 writes a cgroup v1 file with every controller in the same place, the
// way runtimes leave a container.
func v1(path string) string {
	var b strings.Builder
	for _, l := range []string{"12:pids", "11:cpu,cpuacct", "10:memory", "9:devices", "8:blkio", "1:name=systemd"} {
		b.WriteString(l + ":" + path + "\n")
	}
	b.WriteString("0::/\n")
	return b.String()
}

func TestParseCgroup(t *testing.T) {
	u := strings.ReplaceAll(podUID1, "-", "_")
	tests := []struct {
		name            string
		content         string
		defaultRuntime  string
		wantID, wantPod string
	}{
		// docker
		{"docker v1 cgroupfs", v1("/docker/" + hex1), "", "docker://" + hex1, ""},
		{"docker v2 systemd", "0::/system.slice/docker-" + hex1 + ".scope\n", "", "docker://" + hex1, ""},
		{"docker v1 systemd", v1("/system.slice/docker-" + hex1 + ".scope"), "", "docker://" + hex1, ""},

		// Kubernetes with dockershim / cri-dockerd
		{"k8s docker cgroupfs v1", v1("/kubepods/burstable/pod" + podUID1 + "/" + hex1), "docker", "docker://" + hex1, podUID1},
		{"k8s docker systemd v1", v1("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/docker-" + hex1 + ".scope"), "", "docker://" + hex1, podUID1},

		// Kubernetes with containerd
		{"k8s containerd systemd v2 besteffort", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice/cri-containerd-" + hex1 + ".scope\n", "", "containerd://" + hex1, podUID1},
		{"k8s containerd systemd v2 guaranteed", "0::/kubepods.slice/kubepods-pod" + u + ".slice/cri-containerd-" + hex1 + ".scope\n", "", "containerd://" + hex1, podUID1},
		{"k8s containerd systemd v1", v1("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/cri-containerd-" + hex1 + ".scope"), "", "containerd://" + hex1, podUID1},
		{"k8s cgroupfs default runtime is containerd", "0::/kubepods/burstable/pod" + podUID1 + "/" + hex1 + "\n", "", "containerd://" + hex1, podUID1},
		{"k8s cgroupfs guaranteed", "0::/kubepods/pod" + podUID1 + "/" + hex1 + "\n", "containerd", "containerd://" + hex1, podUID1},
		{"k8s cgroupfs v1 besteffort", v1("/kubepods/besteffort/pod" + podUID1 + "/" + hex1), "containerd", "containerd://" + hex1, podUID1},
		{"k8s cgroupfs with cri-o runtime", "0::/kubepods/burstable/pod" + podUID1 + "/" + hex1 + "\n", "cri-o", "cri-o://" + hex1, podUID1},
		{"k8s static pod 32-hex uid", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUID2 + ".slice/cri-containerd-" + hex1 + ".scope\n", "", "containerd://" + hex1, podUID2},
		{"k8s pod cgroup without container", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice\n", "", "", podUID1},
		{"kind node: inner container wins", "0::/system.slice/docker-" + hex2 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + u + ".slice/cri-containerd-" + hex1 + ".scope\n", "", "containerd://" + hex1, podUID1},

		// CRI-O
		{"cri-o systemd v2", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/crio-" + hex1 + ".scope\n", "", "cri-o://" + hex1, podUID1},
		{"cri-o systemd v1", v1("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice/crio-" + hex1 + ".scope"), "", "cri-o://" + hex1, podUID1},
		{"cri-o nested scope", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/crio-" + hex1 + ".scope/container\n", "", "cri-o://" + hex1, podUID1},
		// conmon watches the container from the pod, it is not in it.
		{"cri-o conmon is not the container", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/crio-conmon-" + hex1 + ".scope\n", "", "", podUID1},

		// podman
		{"podman rootful v2", "0::/machine.slice/libpod-" + hex1 + ".scope\n", "", "podman://" + hex1, ""},
		{"podman rootful v2 nested", "0::/machine.slice/libpod-" + hex1 + ".scope/container\n", "", "podman://" + hex1, ""},
		{"podman rootless v2", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + hex1 + ".scope\n", "", "podman://" + hex1, ""},
		{"podman v1 cgroupfs", v1("/libpod_parent/libpod-" + hex1), "", "podman://" + hex1, ""},
		{"podman v1 cgroupfs bare id", v1("/libpod_parent/" + hex1), "", "podman://" + hex1, ""},
		{"podman conmon is not the container", "0::/machine.slice/libpod-conmon-" + hex1 + ".scope\n", "", "", ""},

		// containerd without Kubernetes
		{"nerdctl v2", "0::/default/" + hex1 + "\n", "", "containerd://" + hex1, ""},
		{"nerdctl v1 ignores default runtime", v1("/default/" + hex1), "docker", "containerd://" + hex1, ""},
		{"containerd daemon itself", "0::/system.slice/containerd.service\n", "", "", ""},
		{"containerd daemon v1", v1("/system.slice/containerd.service"), "", "", ""},

		// host processes
		{"host session v2", "0::/user.slice/user-1000.slice/session-2.scope\n", "", "", ""},
		{"init v2", "0::/init.scope\n", "", "", ""},
		{"host v1", v1("/user.slice/user-1000.slice/session-2.scope"), "", "", ""},
		{"root cgroup", "0::/\n", "", "", ""},
		{"deleted cgroup keeps its id", "0::/system.slice/docker-" + hex1 + ".scope (deleted)\n", "", "docker://" + hex1, ""},
		{"no trailing newline", "0::/docker/" + hex1, "", "docker://" + hex1, ""},

		// v1 line preference
		{"only cpu line has an id", "4:cpu,cpuacct:/docker/" + hex1 + "\n10:memory:/\n0::/\n", "", "docker://" + hex1, ""},
		{"memory line beats cpu line", "4:cpu,cpuacct:/docker/" + hex2 + "\n10:memory:/docker/" + hex1 + "\n", "", "docker://" + hex1, ""},
		{"first preferred line wins", "10:memory:/docker/" + hex1 + "\n12:pids:/docker/" + hex2 + "\n", "", "docker://" + hex1, ""},
		{"id beats pod-only line", "10:memory:/kubepods/burstable/pod" + podUID1 + "\n4:cpu:/kubepods/burstable/pod" + podUID1 + "/" + hex1 + "\n", "", "containerd://" + hex1, podUID1},

		// not ids, not pods, malformed
		{"empty", "", "", "", ""},
		{"garbage", "not a cgroup file", "", "", ""},
		{"only colons", "::\n:::\n", "", "", ""},
		{"relative path", "0::docker/" + hex1 + "\n", "", "", ""},
		{"63 hex", "0::/docker/" + hex1[:63] + "\n", "", "", ""},
		{"65 hex", "0::/docker/" + hex1 + "a\n", "", "", ""},
		{"uppercase hex", "0::/docker/" + strings.ToUpper(hex1) + "\n", "", "", ""},
		{"pod dir outside kubepods", "0::/pod" + podUID1 + "/" + hex1 + "\n", "", "containerd://" + hex1, ""},
		{"bad pod uid", "0::/kubepods/burstable/podnot-a-uid/" + hex1 + "\n", "", "containerd://" + hex1, ""},
		{"pod below the container does not count", "0::/kubepods/" + hex1 + "/pod" + podUID1 + "\n", "", "containerd://" + hex1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, pod := ParseCgroup(tt.content, tt.defaultRuntime)
			if id != tt.wantID || pod != tt.wantPod {
				t.Errorf("ParseCgroup(%q, %q) = %q, %q; want %q, %q", tt.content, tt.defaultRuntime, id, pod, tt.wantID, tt.wantPod)
			}
		})
	}
}

func FuzzParseCgroup(f *testing.F) {
	u := strings.ReplaceAll(podUID1, "-", "_")
	for _, s := range []string{
		"",
		"0::/\n",
		v1("/docker/" + hex1),
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice/cri-containerd-" + hex1 + ".scope\n",
		"0::/kubepods/pod" + podUID1 + "/" + hex1 + "\n",
		"0::/machine.slice/libpod-conmon-" + hex1 + ".scope\n",
		"0::/system.slice/docker-" + hex1 + ".scope (deleted)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		id, pod := ParseCgroup(content, "")
		if id != "" {
			runtime, hex, ok := strings.Cut(id, "://")
			switch {
			case !ok, !isHex64(hex):
				t.Fatalf("container id %q is not <runtime>://<64 hex>", id)
			case runtime != RuntimeContainerd && runtime != RuntimeDocker && runtime != RuntimeCRIO && runtime != RuntimePodman:
				t.Fatalf("container id %q has unknown runtime", id)
			case !strings.Contains(content, hex):
				t.Fatalf("container id %q not in the input", id)
			}
		}
		if pod != "" && !isPodUID(pod) {
			t.Fatalf("pod uid %q is not a UID", pod)
		}
	})
}
