//! Strategies of networking.k8s.io's ServiceCIDRs and IPAddresses (KEP-1880), as upstream's
//! `pkg/registry/networking/{servicecidr,ipaddress}` and `ValidateServiceCIDR` /
//! `ValidateIPAddress`: CIDRs checked strictly and immutable, a parentRef required and immutable.

use std::net::IpAddr;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::ip::{Cidr, cidr_errors};
use k1s_apimachinery::validation::is_dns1123_subdomain;
use serde_json::Value;

use super::go_value::go_quote;
pub(crate) use super::go_value::{go_string_slice, go_typed_slice};
use crate::registry::Strategy;

fn cidrs(obj: &Value) -> &[Value] {
    obj.pointer("/spec/cidrs")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub struct ServiceCidrs;
impl Strategy for ServiceCidrs {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        const FIELD: &str = "spec.cidrs";
        let list = cidrs(obj);
        // Upstream prints the whole spec (`networking.ServiceCIDRSpec{CIDRs:[]string{...}}`).
        let spec = || {
            format!(
                "networking.ServiceCIDRSpec{{CIDRs:{}}}",
                go_string_slice(list)
            )
        };
        if list.is_empty() {
            return vec![FieldError::required(FIELD, "at least one CIDR required")];
        }
        if list.len() > 2 {
            return vec![FieldError::invalid_raw(
                FIELD,
                spec(),
                "may only hold up to 2 values",
            )];
        }
        if list.len() == 2 {
            // Upstream's IsDualStackCIDRStrings: both parse, one of each family.
            let families: Vec<Option<bool>> = list
                .iter()
                .map(|v| v.as_str().and_then(Cidr::parse).map(|(c, _)| c.is_ipv4()))
                .collect();
            let dual = matches!(families.as_slice(), [Some(a), Some(b)] if a != b);
            if !dual {
                return vec![FieldError::invalid_raw(
                    FIELD,
                    spec(),
                    "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
                )];
            }
        }
        let mut errs = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let field = format!("{FIELD}[{i}]");
            match v.as_str() {
                Some(s) => errs.extend(
                    cidr_errors(s)
                        .into_iter()
                        .map(|detail| FieldError::invalid(field.clone(), s, detail)),
                ),
                None => errs.push(FieldError::invalid(field, v.clone(), "must be a string")),
            }
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        if cidrs(new) != cidrs(old) {
            errs.push(FieldError::invalid_raw(
                "spec.cidrs",
                go_string_slice(cidrs(new)),
                "field is immutable",
            ));
        }
        errs
    }
}

/// Upstream's `IsValidPathSegmentName` details.
pub(super) fn path_segment_errors(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| value.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Go's `%#v` of a dereferenced `networking.ParentReference`.
fn go_parent_ref(p: &Value) -> String {
    let f = |k: &str| go_quote(p.get(k).and_then(Value::as_str).unwrap_or_default());
    format!(
        "networking.ParentReference{{Group:{}, Resource:{}, Namespace:{}, Name:{}}}",
        f("group"),
        f("resource"),
        f("namespace"),
        f("name")
    )
}

pub struct IpAddresses;
impl Strategy for IpAddresses {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let Some(p) = obj.pointer("/spec/parentRef").filter(|p| !p.is_null()) else {
            return vec![FieldError::required("spec.parentRef", "")];
        };
        let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
        let mut errs = Vec::new();
        // The core group is "", so an empty group cannot be refused.
        let group = text("group");
        if !group.is_empty() {
            errs.extend(
                is_dns1123_subdomain(group)
                    .into_iter()
                    .map(|d| FieldError::invalid("spec.parentRef.group", group, d)),
            );
        }
        for (key, required) in [("resource", true), ("name", true), ("namespace", false)] {
            let field = format!("spec.parentRef.{key}");
            let value = text(key);
            if value.is_empty() {
                if required {
                    errs.push(FieldError::required(field, ""));
                }
                continue;
            }
            errs.extend(
                path_segment_errors(value)
                    .into_iter()
                    .map(|d| FieldError::invalid(field.clone(), value, d)),
            );
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let (n, o) = (
            new.pointer("/spec/parentRef"),
            old.pointer("/spec/parentRef"),
        );
        if n != o {
            let shown = n
                .filter(|p| !p.is_null())
                .map_or_else(|| "null".to_string(), go_parent_ref);
            errs.push(FieldError::invalid_raw(
                "spec.parentRef",
                shown,
                "field is immutable",
            ));
        }
        errs
    }
}

/// The IP family label value of an address (`ipaddress.kubernetes.io/ip-family`).
pub fn ip_family(ip: &IpAddr) -> &'static str {
    if ip.is_ipv4() { "IPv4" } else { "IPv6" }
}
