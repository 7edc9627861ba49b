module github.com/NoLagApp/kraken

go 1.26.0

require (
	github.com/cloudwego/netpoll v0.7.2
	github.com/gobwas/ws v1.5.0
	github.com/google/uuid v1.6.0
	github.com/gorilla/websocket v1.5.3
	github.com/tinylib/msgp v1.6.5
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
