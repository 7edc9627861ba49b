package noop_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/store/noop"
	"github.com/NoLagApp/kraken/pkg/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return noop.Store{} }, storetest.Options{Records: false})
}
