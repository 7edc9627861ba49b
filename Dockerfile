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
# /data, owned by the image's user, for the durable store (STORE_DIR): a
# volume mounted there starts with this owner. Distroless has no mkdir.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
WORKDIR /app
COPY --from=build /out/kraken /app/kraken
COPY examples/auth.json /app/examples/auth.json
COPY --from=build --chown=nonroot:nonroot /out/data /data
ENV AUTH_FILE=/app/examples/auth.json WS_PORT=8080
# 8080: WebSocket (/ws) and HTTP (/health). The MQTT 3.1.1 listener
# (docs/mqtt.md) is off by default, so 1883 is not exposed: with
# -e MQTT_ENABLED=true also publish it (-p 1883:1883).
EXPOSE 8080
USER nonroot:nonroot
# Distroless has no shell and no curl: kraken checks itself. `kraken health`
# GETs http://127.0.0.1:$WS_PORT/health and exits 0 on {"status":"ok"}, 1
# otherwise (2 s timeout).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/app/kraken", "health"]
ENTRYPOINT ["/app/kraken"]
