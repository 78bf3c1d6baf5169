# The execledger binary on a small Debian base (bubblewrap for tier C).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo on: the sandbox init (internal/sandbox/procinit) then runs as C before
# the Go runtime starts, several times cheaper per tier B or C call; the
# runtime stage below is Debian with the glibc the binary links.
RUN CGO_ENABLED=1 go build -trimpath -o /out/execledger ./cmd/execledger

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The keys volume of docker-compose.yml is mounted here. A new named volume
# takes the owner and mode of the image's directory, so the init service
# (uid 65534) can write the keys, and serve (uid 65534 too) can read them:
# attest.LoadSigner refuses a private key that group or others can read, so
# the keys stay 0600 and both services must run as their owner.
RUN install -d -o 65534 -g 65534 -m 0700 /var/lib/execledger /var/lib/execledger/keys
COPY --from=build /out/execledger /usr/local/bin/execledger
USER 65534:65534
ENTRYPOINT ["execledger"]
