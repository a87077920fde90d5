// natsbench: the broker workloads parley-bench runs through parleyd, through nats-server instead, with the Go
// client (Debian's golang-github-nats-io-go-nats-dev). scripts/bench-compare starts nats-server and this program,
// and prints each figure beside parleyd's. One JSON object per measurement on standard output.
//
//	natsbench -url nats://127.0.0.1:4222 -n 1000000 -payload FILE
//
// Workloads, each on connections of their own (one per publisher, one per subscriber):
//
//	oneway   publisher -> server -> one subscriber; msgs/s from the first publish until the subscriber has all
//	fanout   one publisher -> server -> ten subscribers; messages delivered per second (n x 10 / time)
//	reqrep   a request answered by a responder through the server, one at a time; p50 and p99 in microseconds
//
// Each runs twice: with every subscriber (and the responder) a process of its own, as parleyd's peers are
// (nats_small, nats_fanout, nats_rtt_*: the figures parleyd is compared with), and with them in this process
// beside the publisher, sharing its Go runtime (nats_*_one_process: for reference). A subscriber process is this
// program again:
//
//	natsbench -subscribe SUBJECT -n N     prints "ready", then "done UNIXNANO" once it has N messages
//	natsbench -respond SUBJECT            prints "ready", then echoes requests until its standard input closes
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

type measurement struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

func emit(name string, value float64, unit string) {
	line, _ := json.Marshal(measurement{name, value, unit})
	fmt.Println(string(line))
}

func connect(url string) *nats.Conn {
	conn, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: cannot connect to %s: %v\n", url, err)
		os.Exit(1)
	}
	return conn
}

// deliver publishes n messages and waits until each of the subscribers has received all of them; the seconds.
func deliver(url string, payload []byte, n int, subscribers int) float64 {
	var ready, done sync.WaitGroup
	ready.Add(subscribers)
	done.Add(subscribers)
	subject := fmt.Sprintf("bench.%d", time.Now().UnixNano())
	var conns []*nats.Conn
	for i := 0; i < subscribers; i++ {
		conn := connect(url)
		conns = append(conns, conn)
		counting(conn, subject, n, done.Done)
		ready.Done()
	}
	ready.Wait()
	publisher := connect(url)
	defer publisher.Close()
	start := time.Now()
	publish(publisher, subject, payload, n)
	done.Wait()
	elapsed := time.Since(start).Seconds()
	for _, conn := range conns {
		conn.Close()
	}
	return elapsed
}

// counting subscribes conn to subject and calls all once n messages have come; subscribed when it returns.
func counting(conn *nats.Conn, subject string, n int, all func()) {
	count := 0
	sub, err := conn.Subscribe(subject, func(*nats.Msg) {
		count++
		if count == n {
			all()
		}
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: subscribe: %v\n", err)
		os.Exit(1)
	}
	// A slow consumer must not lose messages: the count would never be reached.
	sub.SetPendingLimits(-1, -1)
	conn.Flush()
}

// echoing subscribes conn to subject and answers every request with its own payload; subscribed when it returns.
func echoing(conn *nats.Conn, subject string) {
	if _, err := conn.Subscribe(subject, func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: subscribe: %v\n", err)
		os.Exit(1)
	}
	conn.Flush()
}

// publish sends payload n times on subject, and returns once the server has them all.
func publish(publisher *nats.Conn, subject string, payload []byte, n int) {
	for i := 0; i < n; i++ {
		if err := publisher.Publish(subject, payload); err != nil {
			fmt.Fprintf(os.Stderr, "natsbench: publish: %v\n", err)
			os.Exit(1)
		}
	}
	publisher.Flush()
}

// child is a subscriber or responder process: this program run with -subscribe or -respond.
type child struct {
	command *exec.Cmd
	stdin   io.WriteCloser
	lines   *bufio.Scanner
}

func start(url string, arguments ...string) *child {
	command := exec.Command(os.Args[0], append([]string{"-url", url}, arguments...)...)
	command.Stderr = os.Stderr
	stdin, _ := command.StdinPipe()
	stdout, _ := command.StdoutPipe()
	if err := command.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: cannot start a subscriber process: %v\n", err)
		os.Exit(1)
	}
	c := &child{command, stdin, bufio.NewScanner(stdout)}
	c.expect("ready")
	return c
}

// expect reads the child's next line, which must start with word; the rest of it.
func (c *child) expect(word string) string {
	if !c.lines.Scan() || !strings.HasPrefix(c.lines.Text(), word) {
		fmt.Fprintf(os.Stderr, "natsbench: a subscriber process did not say %q\n", word)
		os.Exit(1)
	}
	return strings.TrimSpace(strings.TrimPrefix(c.lines.Text(), word))
}

func (c *child) stop() {
	c.stdin.Close()
	c.command.Wait()
}

// deliverToProcesses is deliver with each subscriber a process of its own: the seconds from the first publish until
// the last subscriber has all n (their clocks are the machine's wall clock).
func deliverToProcesses(url string, payload []byte, n int, subscribers int) float64 {
	subject := fmt.Sprintf("bench.%d", time.Now().UnixNano())
	var children []*child
	for i := 0; i < subscribers; i++ {
		children = append(children, start(url, "-subscribe", subject, "-n", strconv.Itoa(n)))
	}
	publisher := connect(url)
	defer publisher.Close()
	begun := time.Now().UnixNano()
	publish(publisher, subject, payload, n)
	last := begun
	for _, c := range children {
		ended, _ := strconv.ParseInt(c.expect("done"), 10, 64)
		if ended > last {
			last = ended
		}
		c.stop()
	}
	return float64(last-begun) / 1e9
}

// subscribe is a subscriber process: ready once subscribed, done (with the wall-clock time) once it has n messages.
func subscribe(url string, subject string, n int) {
	conn := connect(url)
	done := make(chan int64)
	counting(conn, subject, n, func() { done <- time.Now().UnixNano() })
	fmt.Println("ready")
	fmt.Printf("done %d\n", <-done)
	io.Copy(io.Discard, os.Stdin)
	conn.Close()
}

// respond is a responder process: echoes every request on subject until its standard input closes.
func respond(url string, subject string) {
	conn := connect(url)
	echoing(conn, subject)
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	conn.Close()
}

// requestReply times n requests, one at a time, answered by a responder in this process or (separate) in a
// process of its own.
func requestReply(url string, payload []byte, n int, separate bool) (p50, p99 float64) {
	subject := fmt.Sprintf("bench.echo.%d", time.Now().UnixNano())
	if separate {
		responder := start(url, "-respond", subject)
		defer responder.stop()
	} else {
		responder := connect(url)
		defer responder.Close()
		echoing(responder, subject)
	}
	requester := connect(url)
	defer requester.Close()
	// Warm up the connections and the server's interest graph.
	for i := 0; i < 1000; i++ {
		requester.Request(subject, payload, 5*time.Second)
	}
	samples := make([]float64, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := requester.Request(subject, payload, 5*time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "natsbench: request: %v\n", err)
			os.Exit(1)
		}
		samples[i] = float64(time.Since(start).Nanoseconds()) / 1000
	}
	sort.Float64s(samples)
	return samples[n/2], samples[n*99/100]
}

func main() {
	url := flag.String("url", nats.DefaultURL, "nats-server to use")
	n := flag.Int("n", 1000000, "messages one way (fan-out: a tenth of them, to each of ten)")
	rounds := flag.Int("rounds", 10000, "request/reply rounds")
	payloadFile := flag.String("payload", "", "the payload's file (parley-bench's 109-byte JSON)")
	subscribeTo := flag.String("subscribe", "", "be a subscriber process on this subject")
	respondOn := flag.String("respond", "", "be a responder process on this subject")
	flag.Parse()
	if *subscribeTo != "" {
		subscribe(*url, *subscribeTo, *n)
		return
	}
	if *respondOn != "" {
		respond(*url, *respondOn)
		return
	}
	payload, err := os.ReadFile(*payloadFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: cannot read the payload: %v\n", err)
		os.Exit(1)
	}
	fan := *n / 10
	emit("nats_small", float64(*n)/deliverToProcesses(*url, payload, *n, 1), "msgs/s")
	emit("nats_fanout", float64(fan*10)/deliverToProcesses(*url, payload, fan, 10), "deliveries/s")
	p50, p99 := requestReply(*url, payload, *rounds, true)
	emit("nats_rtt_p50", p50, "µs")
	emit("nats_rtt_p99", p99, "µs")
	emit("nats_small_one_process", float64(*n)/deliver(*url, payload, *n, 1), "msgs/s")
	emit("nats_fanout_one_process", float64(fan*10)/deliver(*url, payload, fan, 10), "deliveries/s")
	p50, p99 = requestReply(*url, payload, *rounds, false)
	emit("nats_rtt_p50_one_process", p50, "µs")
	emit("nats_rtt_p99_one_process", p99, "µs")
}
