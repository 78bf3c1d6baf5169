# The execledger binary on a small Debian base (bubblewrap for tier C).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/execledger ./cmd/execledger

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/execledger /usr/local/bin/execledger
USER 65534:65534
ENTRYPOINT ["execledger"]
