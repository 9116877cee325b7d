//! antiopa's integration tests, one module per area, built into a single test binary.
//!
//! One binary rather than one per file: each test binary links the whole library and its
//! dependencies (kube, k8s-openapi, the fake apiserver), so two dozen of them cost CI most of its
//! link time and gigabytes of disk. `cargo test --test integration <module>::` runs one area.

mod cluster_support;
mod common;

mod ao_examples;
mod architecture;
mod cli;
mod cluster_apply;
mod cluster_bad_input;
mod cluster_cli;
mod cluster_drift;
mod cluster_exports;
mod cluster_helm;
mod cluster_install;
mod cluster_kps;
mod cluster_leader;
mod cluster_lifecycle;
mod cluster_module_deps;
mod cluster_mysql;
mod cluster_ns_selector;
mod cluster_operator;
mod cluster_operator_api;
mod cluster_operator_archive;
mod cluster_ownership;
mod cluster_queues;
mod cluster_ui;
mod cluster_watch_health;
mod compat;
mod corpus;
mod diff;
mod errors;
mod fuzz_corpus;
mod hooks_config;
mod hooks_run;
mod hostile_hooks;
mod module_config;
mod module_shipped;
mod module_tree;
mod render_api;
mod render_limits;
mod render_longlived;
mod values_config;
mod values_model;
mod values_names;
mod values_patch;
mod values_schema;
mod yaml_corpus;
mod yaml_funcs;
mod yaml_helm;
