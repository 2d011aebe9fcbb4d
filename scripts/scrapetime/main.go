// Command scrapetime times kept-alive scrapes of a /metrics URL, as Prometheus makes them
// (gzip accepted, one connection), and, with -memory, interleaves each with a scrape of
// the same bytes served from memory by a plain net/http server on loopback, in a process
// of its own as the exporter is: the floor a scrape can reach on this machine. It prints
// p50 and p95 of each and their ratio.
//
//	go run ./scripts/scrapetime -url http://127.0.0.1:10090/metrics -n 2000 -memory
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:10090/metrics", "the /metrics URL to scrape")
	n := flag.Int("n", 2000, "scrapes (of each, with -memory)")
	encoding := flag.String("encoding", "gzip", "Accept-Encoding to send (empty for none)")
	memory := flag.Bool("memory", false, "interleave with the same bytes served from memory")
	serveFile := flag.String("serve", "", "internal: serve this file's bytes (-memory's server process)")
	flag.Parse()
	if *serveFile != "" {
		if err := serveBytes(*serveFile); err != nil {
			fmt.Fprintln(os.Stderr, "scrapetime:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout, *url, *n, *encoding, *memory); err != nil {
		fmt.Fprintln(os.Stderr, "scrapetime:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, url string, n int, encoding string, memory bool) error {
	client := &http.Client{Transport: &http.Transport{
		DisableCompression:  true, // the body is read as sent, as a scraper would before decoding
		MaxIdleConnsPerHost: 1,
	}, Timeout: 10 * time.Second}
	first, hdr, err := fetch(client, url, encoding)
	if err != nil {
		return err
	}
	var memURL string
	if memory {
		addr, stop, err := startServer(first, hdr)
		if err != nil {
			return err
		}
		defer stop()
		memURL = "http://" + addr + "/metrics"
	}
	var target, floor []time.Duration
	size := len(first)
	for range n {
		start := time.Now()
		b, _, err := fetch(client, url, encoding)
		if err != nil {
			return err
		}
		target = append(target, time.Since(start))
		size = len(b)
		if memory {
			start = time.Now()
			if _, _, err := fetch(client, memURL, encoding); err != nil {
				return err
			}
			floor = append(floor, time.Since(start))
		}
	}
	p50, p95 := percentile(target, 0.5), percentile(target, 0.95)
	fmt.Fprintf(out, "scrapes %d encoding %q bytes %d  p50 %s  p95 %s\n", n, encoding, size, us(p50), us(p95))
	if memory {
		m50, m95 := percentile(floor, 0.5), percentile(floor, 0.95)
		fmt.Fprintf(out, "from memory            bytes %d  p50 %s  p95 %s\n", len(first), us(m50), us(m95))
		fmt.Fprintf(out, "ratio p50 %.2f\n", float64(p50)/float64(m50))
	}
	return nil
}

// startServer runs this program with -serve in a process of its own, serving body with
// hdr's Content-Type and Content-Encoding, and returns its address.
func startServer(body []byte, hdr http.Header) (addr string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "scrapetime")
	if err != nil {
		return "", nil, err
	}
	file := filepath.Join(dir, "body")
	head := hdr.Get("Content-Type") + "\n" + hdr.Get("Content-Encoding") + "\n"
	if err := os.WriteFile(file, append([]byte(head), body...), 0o600); err != nil {
		return "", nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, "-serve", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("memory server did not start: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// serveBytes is the -serve process: the file holds a Content-Type line, a
// Content-Encoding line and the body.
func serveBytes(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	ctype, rest, _ := bytes.Cut(b, []byte("\n"))
	cenc, body, _ := bytes.Cut(rest, []byte("\n"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	length := strconv.Itoa(len(body))
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if len(ctype) > 0 {
			w.Header().Set("Content-Type", string(ctype))
		}
		if len(cenc) > 0 {
			w.Header().Set("Content-Encoding", string(cenc))
		}
		w.Header().Set("Content-Length", length)
		_, _ = w.Write(body)
	}))
}

func fetch(c *http.Client, url, encoding string) ([]byte, http.Header, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, nil, err
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rsp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return nil, nil, err
	}
	if rsp.StatusCode != 200 {
		return nil, nil, fmt.Errorf("%s: %s", url, rsp.Status)
	}
	return b, rsp.Header, nil
}

// percentile is the nearest-rank percentile of ds (which it sorts).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(p*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/1e3) }
