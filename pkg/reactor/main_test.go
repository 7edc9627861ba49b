package reactor

import (
	"fmt"
	"os"
	"testing"

	"github.com/cloudwego/netpoll"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
// netpoll's pollers (and the goroutine pool they hand reads to) live for the
// whole process by design.
//
// It also checks, before any test runs, that netpoll is tuned already: its
// buffer sizes are globals its pollers read, so a test using netpoll
// directly (TestStreamRemoteAddrPort) before the first Listen once raced
// with tuning done there.
func TestMain(m *testing.M) {
	if netpoll.LinkBufferCap != 512 {
		fmt.Fprintf(os.Stderr, "netpoll.LinkBufferCap is %d before any Listen: netpoll must be tuned at init\n", netpoll.LinkBufferCap)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run.func1"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"),
	)
}
