# Multi-stage build: compile antiopa, ship only the binary in a small non-root image.
# No helm binary inside: antiopa renders charts itself.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY build.rs ./
COPY src ./src
COPY tests ./tests
COPY .cargo ./.cargo
# The `dist` profile (fat LTO, one code unit): a position-independent executable, so the binary
# is address-randomised; the static, position-dependent `cargo tuned-release` build is only for
# the benchmark against helm.
RUN cargo build --profile dist --locked --bin antiopa \
 && cp target/dist/antiopa /antiopa \
 && strip /antiopa

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates bash jq \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --home-dir /nonexistent --shell /usr/sbin/nologin antiopa
COPY --from=build /antiopa /usr/local/bin/antiopa
COPY modules /modules
COPY global-hooks /global-hooks
ENV MODULES_DIR=/modules GLOBAL_HOOKS_DIR=/global-hooks
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/antiopa"]
