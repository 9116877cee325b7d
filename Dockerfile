# Multi-stage build: compile antiopa, ship only the binary in a small non-root image.
# No helm binary inside: antiopa renders charts itself.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY build.rs ./
COPY src ./src
COPY tests ./tests
COPY .cargo ./.cargo
COPY compat ./compat
# Statically linked for the build host (see .cargo/config.toml): no dynamic loading at start-up.
# On x86_64 also optimised with a profile of the compat cases, the build the benchmark measures
# (compat/pgo-build.sh); other hosts get the same static build without a profile.
RUN host="$(rustc -vV | sed -n 's/^host: //p')" \
 && if [ "$host" = x86_64-unknown-linux-gnu ]; then \
      compat/pgo-build.sh && cp target/pgo/antiopa /antiopa; \
    else \
      cargo build --release --locked --bin antiopa --target "$host" \
        --config "target.$host.rustflags=['-C','target-feature=+crt-static','-C','relocation-model=static','-C','symbol-mangling-version=v0']" \
      && cp "target/$host/release/antiopa" /antiopa; \
    fi \
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
