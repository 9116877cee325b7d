//! Module names ↔ values keys (addon-operator's `ModuleNameToValuesKey` /
//! `ModuleNameFromValuesKey`, ettle/strcase v0.2.0), on real module names.

use antiopa::values::names::{module_of_config_key, validate_module_name};
use antiopa::values::{enabled_key, module_name, values_key};

/// Module names from addon-operator's examples and Deckhouse's module
/// catalogue, with their values keys.
const ROUND_TRIPS: &[(&str, &str)] = &[
    ("module1", "module1"),
    ("prometheus", "prometheus"),
    ("prometheus-operator", "prometheusOperator"),
    ("hello-world-module", "helloWorldModule"),
    ("cert-manager", "certManager"),
    ("cert-manager-crd", "certManagerCrd"),
    ("l2-load-balancer", "l2LoadBalancer"),
    ("2-module-name", "2ModuleName"),
    ("module-one01", "moduleOne01"),
    ("ingress-nginx", "ingressNginx"),
    ("node-local-dns", "nodeLocalDns"),
    ("cni-cilium", "cniCilium"),
    ("cloud-provider-aws", "cloudProviderAws"),
    ("cloud-provider-vsphere", "cloudProviderVsphere"),
    ("control-plane-manager", "controlPlaneManager"),
    (
        "monitoring-kubernetes-control-plane",
        "monitoringKubernetesControlPlane",
    ),
    ("operator-prometheus-crd", "operatorPrometheusCrd"),
    ("vertical-pod-autoscaler", "verticalPodAutoscaler"),
    ("log-shipper", "logShipper"),
    ("user-authn", "userAuthn"),
    ("upmeter", "upmeter"),
    ("k8s-gateway", "k8sGateway"),
    ("s3-storage", "s3Storage"),
    ("ipv6-support", "ipv6Support"),
    ("cert-manager-v2", "certManagerV2"),
    ("sds-node-configurator", "sdsNodeConfigurator"),
    ("echo", "echo"),
    ("simple-module", "simpleModule"),
];

#[test]
fn real_module_names_round_trip() {
    for (name, key) in ROUND_TRIPS {
        assert_eq!(values_key(name), *key, "values key of {name}");
        assert_eq!(module_name(key), *name, "module name of {key}");
        assert_eq!(validate_module_name(name), Ok(()), "{name}");
        assert_eq!(enabled_key(name), format!("{key}Enabled"));
        assert_eq!(module_of_config_key(key), Ok(Some(name.to_string())));
        assert_eq!(
            module_of_config_key(&format!("{key}Enabled")),
            Ok(Some(name.to_string()))
        );
        assert_eq!(
            module_of_config_key(&format!("{key}Maintenance")),
            Ok(Some(name.to_string()))
        );
    }
    assert_eq!(module_of_config_key("global"), Ok(None));
}

#[test]
fn names_that_do_not_round_trip_are_refused() {
    let mut out = String::new();
    for name in [
        "module_one",
        "Module",
        "ingressNginx",
        "a-1b",
        "prometheus-2",
        "my--module",
        "x.y",
        " padded ",
    ] {
        let err = validate_module_name(name).expect_err(name);
        out.push_str(&format!("{err}\n"));
    }
    for key in ["ingress-nginx", "Prometheus", "foo_bar", "aBC"] {
        let err = module_of_config_key(key).expect_err(key);
        out.push_str(&format!("{err}\n"));
    }
    insta::assert_snapshot!("bad_names", out);
}

#[test]
fn conversion_quirks_of_strcase() {
    // Digits after letters stay in the word; letters after digits start one.
    assert_eq!(module_name("http2Proxy"), "http2-proxy");
    assert_eq!(module_name("ipv4Addr2Go"), "ipv4-addr2-go");
    // Acronyms split before their last capital.
    assert_eq!(module_name("myHTTPServer"), "my-http-server");
    assert_eq!(values_key("my-http-server"), "myHttpServer");
    // `.` and `_` and spaces are delimiters; `.` between digits is kept.
    assert_eq!(values_key("v1.2-module"), "v1.2Module");
    assert_eq!(values_key("snake_case name"), "snakeCaseName");
}
