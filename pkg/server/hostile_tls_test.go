package server

import (
	"crypto/tls"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/certs/certstest"
)

// TestHostileSuitesOverTLS runs the hostile-input suites (abuse, framing,
// the upgrade request, MessagePack) again with every client on the TLS
// listener (WSS_PORT): the same refusals, close codes and limits, through
// the TLS record layer, with no goroutine left behind by their
// connections. The liveness suite stays plain: it shrinks the kernel's
// buffers of its own sockets.
func TestHostileSuitesOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile suites again")
	}
	ca := certstest.New(t, "hostile")
	certFile, keyFile := ca.Server("kraken", time.Hour)
	store, err := certs.Load(certs.Files{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	overTLS = &struct{ server, client *tls.Config }{store.Config(false), ca.ClientConfig()}
	defer func() { overTLS = nil }()
	before := runtime.NumGoroutine()
	for _, test := range []func(*testing.T){
		TestHostileSubscribeOverTheCapGetsTooManySubscriptions,
		TestHostileResubscribingAnExistingPatternAtTheCapStillWorks,
		TestHostileUnsubscribingAtTheCapFreesASlot,
		TestHostileThousandsOfSubscriptionsStopAtTheDefaultCapOf1000,
		TestHostileSubscribeUnsubscribeChurnLeavesNothingBehind,
		TestHostileTopicOver1024BytesIsInvalidTopic,
		TestHostileTopicWith5000LevelsIsInvalidTopic,
		TestHostileTopicWith65LevelsIsInvalidTopic,
		TestHostileDeclaredLengthOverTheCapCloses1009InEveryLengthEncoding,
		TestHostileLengthWithTheMostSignificantBitSetCloses1002,
		TestHostileManySmallFragmentsAddingUpOverTheCapClose1009,
		TestHostileDataBehindACloseFrameIsIgnoredAndTheCloseEchoedOnce,
		TestHostileDataInALaterWriteAfterACloseFrameIsIgnored,
		TestHostileDeclaredLengthIsNotReservedBeforeItsBytesArrive,
		TestCloseCodesFollowRFC6455Registry,
		TestHostileHTTP10UpgradeIsRefusedWith505,
		TestHostileMethodOtherThanGETOnWSIs405WithAllowGET,
		TestHostileUpgradeWithoutSecWebSocketKeyIs400,
		TestHostileUpgradeWithMalformedSecWebSocketKeyIs400,
		TestHostileUpgradeWithoutSecWebSocketVersionIs400WithVersion13,
		TestHostileUpgradeWithUnsupportedSecWebSocketVersionIs426WithVersion13,
		TestHostileUpgradeHeaderNamesInAnyCaseAreAccepted,
		TestHostileUpgradeConnectionHeaderWithSeveralTokens,
		TestHostileOversizedRequestLineIs431,
		TestHostileRequestHeaderOverTheConfiguredBoundIs431,
		TestHostileDeepMsgpackNestingGetsBadRequest,
		TestHostileDeepMsgpackNestingBeforeAuthGetsBadRequest,
		TestHostileDeepJSONNestingInATextFrameGetsInvalidJSON,
		TestHostileMsgpackNestingAtTheBoundIsAccepted,
		TestHostileContainerDeclaringFourBillionEntriesGetsBadRequest,
		TestHostileLengthsPastTheFrameEndGetBadRequest,
		TestHostileNonStringEnvelopeKeysGetBadRequest,
		TestHostileWrongFieldTypesGetBadRequestOrTheDocumentedFallback,
		TestJSONTextThatIsNotAnObjectFollowsTheNotAMapRule,
	} {
		name := runtime.FuncForPC(reflect.ValueOf(test).Pointer()).Name()
		dials := tlsDials.Load()
		t.Run(name[strings.LastIndex(name, ".")+1:], test)
		if tlsDials.Load() == dials {
			t.Fatalf("%s dialled nothing over TLS", name)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= before+5 })
}
