# Multi-stage build: compile antiopa, ship the binary with the shipped modules and global hooks and
# what shell hooks expect (sh/bash, jq, kubectl) in a small non-root image. No helm binary inside:
# antiopa renders charts itself.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# Dependencies first, against empty sources: this layer is rebuilt only when Cargo.toml/Cargo.lock
# change, not on every source edit. Every target the manifests name must exist to be parsed.
COPY Cargo.toml Cargo.lock build.rs ./
COPY .cargo ./.cargo
COPY tests/fake-apiserver/Cargo.toml ./tests/fake-apiserver/Cargo.toml
RUN mkdir -p src tests/bench tests/fake-apiserver/src \
 && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
 && for b in template render apply operator; do echo 'fn main() {}' > tests/bench/$b.rs; done \
 && touch tests/fake-apiserver/src/lib.rs && echo 'fn main() {}' > tests/fake-apiserver/src/main.rs \
 && cargo build --profile dist --locked --bin antiopa \
 && rm -rf src target/dist/antiopa* target/dist/deps/antiopa-* target/dist/.fingerprint/antiopa-*
COPY src ./src
# Of tests/, only what the manifests name: the fake apiserver (a workspace member) and the benches.
COPY tests/fake-apiserver ./tests/fake-apiserver
COPY tests/bench ./tests/bench
# The `dist` profile (fat LTO, one code unit): a position-independent executable, so the binary
# is address-randomised; the static, position-dependent `cargo tuned-release` build is only for
# the benchmark against helm.
RUN cargo build --profile dist --locked --bin antiopa \
 && cp target/dist/antiopa /antiopa \
 && strip /antiopa

# kubectl from the Kubernetes project's own Debian repository (its key checked by apt), in a stage
# of its own so curl and gnupg stay out of the image. Pinned to the minor version antiopa is
# tested against (k8s-openapi's v1_33).
FROM debian:bookworm-slim AS kubectl
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl gnupg \
 && mkdir -p /etc/apt/keyrings \
 && curl -fsSL https://pkgs.k8s.io/core:/stable:/v1.33/deb/Release.key \
    | gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg \
 && echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /' \
    > /etc/apt/sources.list.d/kubernetes.list \
 && apt-get update \
 && apt-get install -y --no-install-recommends kubectl \
 && kubectl version --client

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates bash jq \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --home-dir /nonexistent --shell /usr/sbin/nologin antiopa \
 && mkdir -p /tmp/antiopa /var/run/antiopa \
 && chown 65532:65532 /tmp/antiopa /var/run/antiopa
COPY --from=kubectl /usr/bin/kubectl /usr/local/bin/kubectl
COPY --from=build /antiopa /usr/local/bin/antiopa
COPY modules /modules
COPY global-hooks /global-hooks
ENV MODULES_DIR=/modules GLOBAL_HOOKS_DIR=/global-hooks ADDON_OPERATOR_TMP_DIR=/tmp/antiopa
USER 65532:65532
EXPOSE 9650
ENTRYPOINT ["/usr/local/bin/antiopa"]
CMD ["run"]
