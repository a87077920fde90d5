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
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
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
		count := 0
		var sub *nats.Subscription
		sub, err := conn.Subscribe(subject, func(*nats.Msg) {
			count++
			if count == n {
				done.Done()
			}
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "natsbench: subscribe: %v\n", err)
			os.Exit(1)
		}
		// A slow consumer must not lose messages: the count would never be reached.
		sub.SetPendingLimits(-1, -1)
		conn.Flush()
		ready.Done()
	}
	ready.Wait()
	publisher := connect(url)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := publisher.Publish(subject, payload); err != nil {
			fmt.Fprintf(os.Stderr, "natsbench: publish: %v\n", err)
			os.Exit(1)
		}
	}
	publisher.Flush()
	done.Wait()
	elapsed := time.Since(start).Seconds()
	publisher.Close()
	for _, conn := range conns {
		conn.Close()
	}
	return elapsed
}

func requestReply(url string, payload []byte, n int) (p50, p99 float64) {
	responder := connect(url)
	defer responder.Close()
	subject := fmt.Sprintf("bench.echo.%d", time.Now().UnixNano())
	if _, err := responder.Subscribe(subject, func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: subscribe: %v\n", err)
		os.Exit(1)
	}
	responder.Flush()
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
	flag.Parse()
	payload, err := os.ReadFile(*payloadFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsbench: cannot read the payload: %v\n", err)
		os.Exit(1)
	}
	emit("nats_small", float64(*n)/deliver(*url, payload, *n, 1), "msgs/s")
	fan := *n / 10
	emit("nats_fanout", float64(fan*10)/deliver(*url, payload, fan, 10), "deliveries/s")
	p50, p99 := requestReply(*url, payload, *rounds)
	emit("nats_rtt_p50", p50, "µs")
	emit("nats_rtt_p99", p99, "µs")
}
