# Multi-stage build of the kraken broker.
#   docker build -t kraken:dev .
#   docker run --rm -p 8080:8080 kraken:dev
# The image holds only the static binary and the demo token file; it runs as
# the distroless "nonroot" user (uid 65532).

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Dependencies first, so this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION is what `kraken version` prints; `make docker` passes git describe.
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kraken ./cmd/kraken

FROM gcr.io/distroless/static-debian12:nonroot
WORKDIR /app
COPY --from=build /out/kraken /app/kraken
COPY examples/auth.json /app/examples/auth.json
ENV AUTH_FILE=/app/examples/auth.json WS_PORT=8080
# 8080: WebSocket (/ws) and HTTP (/health). 1883: MQTT ingress (reserved).
EXPOSE 8080 1883
USER nonroot:nonroot
# No HEALTHCHECK: distroless has no shell and no curl, and kraken has no
# self-check subcommand. Probe GET /health from outside the container
# (load balancer, orchestrator, or `curl localhost:8080/health`).
ENTRYPOINT ["/app/kraken"]
