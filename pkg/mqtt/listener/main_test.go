package listener

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind, once
// the node the fuzz target shares across its inputs is shut down.
// netpoll's pollers (and the goroutine pool they hand reads to) live for the
// whole process by design.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(thenStopFuzzNode{m},
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run.func1"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"),
	)
}

// thenStopFuzzNode runs the tests, then shuts down the fuzz target's node.
type thenStopFuzzNode struct{ m *testing.M }

func (r thenStopFuzzNode) Run() int {
	code := r.m.Run()
	if fuzzNode != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fuzzNode.Shutdown(ctx)
	}
	return code
}
