package retrybudget

import (
	"os"
	"testing"

	"switchyard/store/storetest"
)

// The tests run against one Redis node, then against a local Redis Cluster.
func TestMain(m *testing.M) { os.Exit(storetest.RunTopologies(m)) }
