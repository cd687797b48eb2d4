//! Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library) for cel-rust: quantity, regex
//! (`find`, `findAll`), cel-go's `sets` extension, URLs, IP addresses and CIDRs, and named
//! formats (`format.dns1123Label().validate(s)`, an optional list of messages), with upstream's
//! function names, semantics and error texts.
//!
//! Quantities, URLs, IPs and CIDRs are cel-rust opaque values (`Value::Opaque`): the functions
//! are declared on `dyn` receivers and downcast them, so a call on a value of another type is
//! a "no such overload" error, as in cel-go. Equality (`==`) of two opaques of one kind compares
//! them as upstream does (quantities by value, IPs and CIDRs by address and prefix).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map, Opaque};
use cel::{Env, ExecutionError, Value as Cel};
use k1s_apimachinery::gofmt::quote as go_quote;
use k1s_apimachinery::quantity::{FORMAT_ERROR as QUANTITY_FORMAT, Quantity};

/// The functions these libraries add, for the expression checker.
pub const FUNCTIONS: &[&str] = &[
    // quantity
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    // regex
    "find",
    "findAll",
    // sets
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // urls
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // ip and cidr
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
    // format
    "format.named",
    "validate",
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
];

/// Functions that parse or scan their string argument: cost proportional to its length.
pub const STRING_PARSERS: &[&str] = &[
    "quantity",
    "isQuantity",
    "url",
    "isURL",
    "ip",
    "isIP",
    "isCanonical",
    "ip.isCanonical",
    "cidr",
    "isCIDR",
    "find",
    "findAll",
];

/// Registers the libraries in `env`.
pub fn register(env: &mut Env) {
    let globals: [(&str, usize, Function); 10] = [
        ("quantity", 1, quantity),
        ("isQuantity", 1, is_quantity),
        ("sets.contains", 2, sets_contains),
        ("sets.equivalent", 2, sets_equivalent),
        ("sets.intersects", 2, sets_intersects),
        ("url", 1, url),
        ("isURL", 1, is_url),
        ("isIP", 1, is_ip),
        ("ip.isCanonical", 1, ip_is_canonical),
        ("cidr", 1, cidr),
    ];
    for (name, n, f) in globals {
        let args = match name {
            "sets.contains" | "sets.equivalent" | "sets.intersects" => vec![LIST_TYPE, LIST_TYPE],
            _ => (0..n).map(|_| STRING_TYPE).collect(),
        };
        if let Err(e) = env.add_overload(name, &format!("k8s_{name}"), args, f) {
            tracing::warn!("CEL function {name}: {e}");
        }
    }
    if let Err(e) = env.add_overload("isCIDR", "k8s_is_cidr", vec![STRING_TYPE], is_cidr) {
        tracing::warn!("CEL function isCIDR: {e}");
    }
    // `ip(string)` is global, `cidr.ip()` a member.
    if let Err(e) = env.add_overload("ip", "k8s_ip", vec![STRING_TYPE], ip) {
        tracing::warn!("CEL function ip: {e}");
    }
    let members: [(&str, Vec<cel::common::types::Type>, Function); 26] = [
        ("sign", vec![], q_sign),
        ("isInteger", vec![], q_is_integer),
        ("asInteger", vec![], q_as_integer),
        ("asApproximateFloat", vec![], q_as_float),
        ("add", vec![DYN_TYPE], q_add),
        ("sub", vec![DYN_TYPE], q_sub),
        ("isGreaterThan", vec![DYN_TYPE], q_greater),
        ("isLessThan", vec![DYN_TYPE], q_less),
        ("compareTo", vec![DYN_TYPE], q_compare),
        ("find", vec![STRING_TYPE], find),
        ("findAll", vec![STRING_TYPE], find_all),
        ("findAll", vec![STRING_TYPE, INT_TYPE], find_all),
        ("getScheme", vec![], url_scheme),
        ("getHost", vec![], url_host),
        ("getHostname", vec![], url_hostname),
        ("getPort", vec![], url_port),
        ("getEscapedPath", vec![], url_path),
        ("getQuery", vec![], url_query),
        ("family", vec![], ip_family),
        ("isUnspecified", vec![], ip_is_unspecified),
        ("isLoopback", vec![], ip_is_loopback),
        ("isLinkLocalMulticast", vec![], ip_is_link_local_multicast),
        ("isLinkLocalUnicast", vec![], ip_is_link_local_unicast),
        ("isGlobalUnicast", vec![], ip_is_global_unicast),
        ("containsIP", vec![DYN_TYPE], cidr_contains_ip),
        ("containsCIDR", vec![DYN_TYPE], cidr_contains_cidr),
    ];
    for (name, args, f) in members {
        let id = format!("k8s_{name}_{}", args.len());
        if let Err(e) = env.add_member_overload(name, &id, DYN_TYPE, args, f) {
            tracing::warn!("CEL function {name}: {e}");
        }
    }
    register_formats(env);
    // `string(ip)` and `string(cidr)`, by the opaque type, beside the standard conversions.
    for (ty, f) in [("net.IP", ip_string as Function), ("net.CIDR", cidr_string)] {
        let t = cel::common::types::Type::new_opaque_type(ty);
        if let Err(e) = env.add_overload("string", &format!("k8s_{ty}_string"), vec![t], f) {
            tracing::warn!("CEL function string({ty}): {e}");
        }
    }
    for (name, f) in [
        ("ip", cidr_ip as Function),
        ("prefixLength", cidr_prefix_length),
        ("masked", cidr_masked),
    ] {
        let id = format!("k8s_cidr_{name}");
        if let Err(e) = env.add_member_overload(name, &id, DYN_TYPE, vec![], f) {
            tracing::warn!("CEL function {name}: {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Plumbing

fn values(name: &str, args: &[CowVal<'_, '_>]) -> Result<Vec<Cel>, ExecutionError> {
    args.iter()
        .map(|a| {
            Cel::try_from(a.as_ref())
                .map_err(|_| ExecutionError::function_error(name, "unsupported value"))
        })
        .collect()
}

fn out<'b, 'v>(v: Cel) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let b: Box<dyn cel::common::value::Val> = v
        .try_into()
        .map_err(|_| ExecutionError::function_error("k8s", "unsupported value"))?;
    Ok(CowVal::from(b))
}

fn opaque<'b, 'v, T: Opaque + 'static>(t: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Cel::Opaque(Arc::new(t)))
}

fn error(name: &str, msg: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error(name, msg.into())
}

fn no_overload(name: &str, vals: &[Cel]) -> ExecutionError {
    ExecutionError::no_such_member_overload(
        name,
        vals.iter().map(|v| v.type_of().to_string()).collect(),
    )
}

/// The receiver as a `T`, and the other arguments.
fn receiver<T: Clone + 'static>(
    name: &str,
    args: &[CowVal<'_, '_>],
) -> Result<(T, Vec<Cel>), ExecutionError> {
    let mut vals = values(name, args)?;
    let got = match vals.first() {
        Some(Cel::Opaque(o)) => o.downcast_ref::<T>().cloned(),
        _ => None,
    };
    match got {
        Some(t) => {
            vals.remove(0);
            Ok((t, vals))
        }
        None => Err(no_overload(name, &vals)),
    }
}

fn string_arg(
    name: &str,
    args: &[CowVal<'_, '_>],
    i: usize,
) -> Result<Arc<String>, ExecutionError> {
    let vals = values(name, args)?;
    match vals.get(i) {
        Some(Cel::String(s)) => Ok(s.clone()),
        _ => Err(ExecutionError::no_such_overload(
            name,
            vals.iter().map(|v| v.type_of().to_string()).collect(),
        )),
    }
}

fn bool_out<'b, 'v>(b: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Cel::Bool(b))
}

// ---------------------------------------------------------------------------------------------
// Quantity

/// `kubernetes.Quantity`: an exact resource quantity.
#[derive(Clone, Debug, PartialEq, Eq)]
struct QuantityVal(Quantity);

impl Opaque for QuantityVal {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("quantity", &args, 0)?;
    match Quantity::parse(&s) {
        Some(q) => opaque(QuantityVal(q)),
        None => Err(error("quantity", QUANTITY_FORMAT)),
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("isQuantity", &args, 0)?;
    bool_out(Quantity::parse(&s).is_some())
}

/// The quantity as an int64, when it is a whole number that fits (upstream's AsInt64).
fn as_int64(q: &Quantity) -> Option<i64> {
    let v = i64::try_from(q.value()).ok()?;
    (Quantity::from_int(v) == *q).then_some(v)
}

fn q_sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (QuantityVal(q), _) = receiver::<QuantityVal>("sign", &args)?;
    out(Cel::Int(q.cmp(&Quantity::zero()) as i64))
}

fn q_is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (QuantityVal(q), _) = receiver::<QuantityVal>("isInteger", &args)?;
    bool_out(as_int64(&q).is_some())
}

fn q_as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (QuantityVal(q), _) = receiver::<QuantityVal>("asInteger", &args)?;
    match as_int64(&q) {
        Some(i) => out(Cel::Int(i)),
        None => Err(error("asInteger", "cannot convert value to integer")),
    }
}

fn q_as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (QuantityVal(q), _) = receiver::<QuantityVal>("asApproximateFloat", &args)?;
    out(Cel::Float(q.as_f64()))
}

/// The receiver and the other quantity (or an int, for `add` and `sub`).
fn q_pair(
    name: &str,
    args: &[CowVal<'_, '_>],
    ints: bool,
) -> Result<(Quantity, Quantity), ExecutionError> {
    let (QuantityVal(q), rest) = receiver::<QuantityVal>(name, args)?;
    let other = match rest.first() {
        Some(Cel::Opaque(o)) => o.downcast_ref::<QuantityVal>().map(|v| v.0),
        Some(Cel::Int(i)) if ints => Some(Quantity::from_int(*i)),
        _ => None,
    };
    other.map(|o| (q, o)).ok_or_else(|| {
        let mut vals = vec![Cel::Opaque(Arc::new(QuantityVal(q)))];
        vals.extend(rest);
        no_overload(name, &vals)
    })
}

fn q_add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = q_pair("add", &args, true)?;
    opaque(QuantityVal(a.add(&b)))
}

fn q_sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = q_pair("sub", &args, true)?;
    opaque(QuantityVal(a.sub(&b)))
}

fn q_greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = q_pair("isGreaterThan", &args, false)?;
    bool_out(a > b)
}

fn q_less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = q_pair("isLessThan", &args, false)?;
    bool_out(a < b)
}

fn q_compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = q_pair("compareTo", &args, false)?;
    out(Cel::Int(a.cmp(&b) as i64))
}

// ---------------------------------------------------------------------------------------------
// Regex

/// Go's regexp error for a pattern that does not compile: "error parsing regexp: <what>:
/// `<pattern>`" (the regex crate's explanation is on its last line).
fn regex_message(pattern: &str, e: &regex::Error) -> String {
    let text = e.to_string();
    let what = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or("invalid pattern")
        .to_string();
    format!("error parsing regexp: {what}: `{pattern}`")
}

/// The error of a literal pattern of `find` or `findAll`, found when the rule is compiled (as
/// upstream's regex optimization finds it when it instantiates the program).
pub fn regex_error(pattern: &str) -> Option<String> {
    regex::Regex::new(pattern)
        .err()
        .map(|e| regex_message(pattern, &e))
}

fn compile_regex(name: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| {
        error(
            name,
            format!("Illegal regex: {}", regex_message(pattern, &e)),
        )
    })
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("find", &args, 0)?;
    let re = compile_regex("find", &string_arg("find", &args, 1)?)?;
    let found = re.find(&s).map_or("", |m| m.as_str()).to_string();
    out(Cel::String(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("findAll", &args, 0)?;
    let re = compile_regex("findAll", &string_arg("findAll", &args, 1)?)?;
    let limit = match values("findAll", &args)?.get(2) {
        Some(Cel::Int(n)) if *n >= 0 => Some(*n as usize),
        _ => None,
    };
    let found: Vec<Cel> = re
        .find_iter(&s)
        .take(limit.unwrap_or(usize::MAX))
        .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
        .collect();
    out(Cel::List(Arc::new(found)))
}

// ---------------------------------------------------------------------------------------------
// Sets (cel-go's ext.Sets)

/// CEL equality, numbers compared across int, uint and double.
fn cel_eq(a: &Cel, b: &Cel) -> bool {
    let num = |v: &Cel| match v {
        Cel::Int(i) => Some(*i as f64),
        Cel::UInt(u) => Some(*u as f64),
        Cel::Float(f) => Some(*f),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

type List = Arc<Vec<Cel>>;

fn two_lists(name: &str, args: &[CowVal<'_, '_>]) -> Result<(List, List), ExecutionError> {
    let vals = values(name, args)?;
    match (vals.first(), vals.get(1)) {
        (Some(Cel::List(a)), Some(Cel::List(b))) => Ok((a.clone(), b.clone())),
        _ => Err(ExecutionError::no_such_overload(
            name,
            vals.iter().map(|v| v.type_of().to_string()).collect(),
        )),
    }
}

fn contains_all(list: &[Cel], sub: &[Cel]) -> bool {
    sub.iter().all(|x| list.iter().any(|y| cel_eq(x, y)))
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.contains", &args)?;
    bool_out(contains_all(&a, &b))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.equivalent", &args)?;
    bool_out(contains_all(&a, &b) && contains_all(&b, &a))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.intersects", &args)?;
    bool_out(a.iter().any(|x| b.iter().any(|y| cel_eq(x, y))))
}

// ---------------------------------------------------------------------------------------------
// URLs (Go's net/url: ParseRequestURI to validate, Parse for the parts)

/// `kubernetes.URL`: the parts of a parsed URL.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
struct UrlVal {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

impl Opaque for UrlVal {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// `":digits"` or nothing (Go's validOptionalPort).
fn valid_optional_port(p: &str) -> bool {
    p.is_empty()
        || p.strip_prefix(':')
            .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks percent escapes (Go's unescape errors).
fn check_escapes(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok =
                i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                // Up to three characters from the `%` (Go quotes the bad escape).
                let bad: String = s[i..].chars().take(3).collect();
                return Err(format!("invalid URL escape {}", go_quote(&bad)));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// Go's url.parse: `via_request` is ParseRequestURI's stricter mode (no fragment split,
/// absolute URI or absolute path only).
fn parse_url(raw: &str, via_request: bool) -> Result<UrlVal, String> {
    let fail = |e: &str| format!("parse {}: {e}", go_quote(raw));
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(fail("net/url: invalid control character in URL"));
    }
    let mut rest = raw;
    if !via_request {
        rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    }
    if rest.is_empty() && via_request {
        return Err(fail("empty url"));
    }
    let mut u = UrlVal::default();
    if rest == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    // The scheme: a letter, then letters, digits, `+`, `-`, `.`, up to a colon.
    for (i, c) in rest.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(fail("missing protocol scheme")),
            ':' => {
                u.scheme = rest[..i].to_ascii_lowercase();
                rest = &rest[i + 1..];
                break;
            }
            _ => break,
        }
    }
    if let Some((r, q)) = rest.split_once('?') {
        u.query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            // An opaque URL such as `mailto:x`.
            return Ok(u);
        }
        if via_request {
            return Err(fail("invalid URI for request"));
        }
    }
    if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//")
    {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(inner) = host.strip_prefix('[') {
            let Some(end) = inner.find(']') else {
                return Err(fail("missing ']' in host"));
            };
            let port = &inner[end + 1..];
            if !valid_optional_port(port) {
                return Err(fail(&format!("invalid port {} after host", go_quote(port))));
            }
        } else if let Some(i) = host.rfind(':') {
            let port = &host[i..];
            if !valid_optional_port(port) {
                return Err(fail(&format!("invalid port {} after host", go_quote(port))));
            }
        }
        check_escapes(host).map_err(|e| fail(&e))?;
        u.host = host.to_string();
        rest = path;
    }
    check_escapes(rest).map_err(|e| fail(&e))?;
    u.path = rest.to_string();
    Ok(u)
}

fn url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("url", &args, 0)?;
    let parsed = parse_url(&s, true).and_then(|_| parse_url(&s, false));
    match parsed {
        Ok(u) => opaque(u),
        Err(e) => Err(error(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )),
    }
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("isURL", &args, 0)?;
    bool_out(parse_url(&s, true).is_ok())
}

fn url_string<'b, 'v>(
    name: &str,
    args: &[CowVal<'b, 'v>],
    part: fn(&UrlVal) -> String,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (u, _) = receiver::<UrlVal>(name, args)?;
    out(Cel::String(Arc::new(part(&u))))
}

/// Go's splitHostPort: the host without brackets, and the port.
fn host_port(host: &str) -> (String, String) {
    let (h, p) = match host.rfind(':') {
        Some(i) if valid_optional_port(&host[i..]) => (&host[..i], &host[i + 1..]),
        _ => (host, ""),
    };
    let h = h
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(h);
    (h.to_string(), p.to_string())
}

fn url_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    url_string("getScheme", &args, |u| u.scheme.clone())
}

fn url_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    url_string("getHost", &args, |u| u.host.clone())
}

fn url_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    url_string("getHostname", &args, |u| host_port(&u.host).0)
}

fn url_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    url_string("getPort", &args, |u| host_port(&u.host).1)
}

fn url_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    url_string("getEscapedPath", &args, |u| u.path.clone())
}

/// Go's QueryUnescape: `+` is a space, `%XX` a byte.
fn query_unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut outb = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => outb.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                    return None;
                }
                outb.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => outb.push(c),
        }
        i += 1;
    }
    String::from_utf8(outb).ok()
}

fn url_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (u, _) = receiver::<UrlVal>("getQuery", &args)?;
    let mut m: HashMap<Key, Vec<Cel>> = HashMap::new();
    // Go's ParseQuery, skipping the pairs it refuses (a `;`, a bad escape).
    for pair in u
        .query
        .split('&')
        .filter(|p| !p.is_empty() && !p.contains(';'))
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if let (Some(k), Some(v)) = (query_unescape(k), query_unescape(v)) {
            m.entry(Key::String(Arc::new(k)))
                .or_default()
                .push(Cel::String(Arc::new(v)));
        }
    }
    let m: HashMap<Key, Cel> = m
        .into_iter()
        .map(|(k, v)| (k, Cel::List(Arc::new(v))))
        .collect();
    out(Cel::Map(Map::from(m)))
}

// ---------------------------------------------------------------------------------------------
// IP addresses and CIDRs (Go's net/netip)

/// `net.IP`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct IpVal(IpAddr);

impl Opaque for IpVal {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

/// `net.CIDR`: the address as written and the prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CidrVal(IpAddr, u8);

impl Opaque for CidrVal {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

fn is_4in6(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Upstream's parseIPAddr: netip.ParseAddr without zones or IPv4-mapped IPv6 addresses.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    if let Some((addr, _)) = raw.split_once('%')
        && addr.parse::<Ipv6Addr>().is_ok()
    {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ));
    }
    let a: IpAddr = raw.parse().map_err(|_| {
        format!(
            "IP Address {} parse error during conversion from string: ParseAddr({}): unable to parse IP",
            go_quote(raw),
            go_quote(raw)
        )
    })?;
    if is_4in6(&a) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(a)
}

fn ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("ip", &args, 0)?;
    parse_ip(&s)
        .map_err(|e| error("ip", e))
        .and_then(|a| opaque(IpVal(a)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("isIP", &args, 0)?;
    bool_out(parse_ip(&s).is_ok())
}

fn ip_is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("ip.isCanonical", &args, 0)?;
    let a = parse_ip(&s).map_err(|e| error("ip.isCanonical", e))?;
    bool_out(a.to_string() == *s)
}

fn ip_pred<'b, 'v>(
    name: &str,
    args: &[CowVal<'b, 'v>],
    f: fn(&IpAddr) -> bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (IpVal(a), _) = receiver::<IpVal>(name, args)?;
    bool_out(f(&a))
}

fn ip_family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (IpVal(a), _) = receiver::<IpVal>("family", &args)?;
    out(Cel::Int(if a.is_ipv4() { 4 } else { 6 }))
}

fn ip_is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_pred("isUnspecified", &args, IpAddr::is_unspecified)
}

fn ip_is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_pred("isLoopback", &args, IpAddr::is_loopback)
}

/// 224.0.0.0/24 and ff02::/16 (any flags), as netip's IsLinkLocalMulticast.
fn link_local_multicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// 169.254.0.0/16 and fe80::/10.
fn link_local_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn ip_is_link_local_multicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_pred("isLinkLocalMulticast", &args, link_local_multicast)
}

fn ip_is_link_local_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_pred("isLinkLocalUnicast", &args, link_local_unicast)
}

fn ip_is_global_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_pred("isGlobalUnicast", &args, |a| {
        !(a.is_unspecified()
            || a.is_loopback()
            || a.is_multicast()
            || link_local_unicast(a)
            || *a == IpAddr::V4(Ipv4Addr::BROADCAST))
    })
}

/// Upstream's parseCIDR: netip.ParsePrefix without IPv4-mapped IPv6 addresses.
fn parse_cidr(raw: &str) -> Result<CidrVal, String> {
    let fail = |e: String| {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({}): {e}",
            go_quote(raw)
        )
    };
    let Some((addr, bits)) = raw.rsplit_once('/') else {
        return Err(fail("no '/'".into()));
    };
    if addr.contains('%') {
        return Err(fail("IPv6 zones cannot be present in a prefix".into()));
    }
    let a: IpAddr = addr
        .parse()
        .map_err(|_| fail(format!("ParseAddr({}): unable to parse IP", go_quote(addr))))?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    let valid_digits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && !(bits.len() > 1 && bits.starts_with('0'));
    let n = bits
        .parse::<u32>()
        .ok()
        .filter(|n| valid_digits && *n <= max)
        .ok_or_else(|| fail(format!("bad bits after slash: {}", go_quote(bits))))?;
    if is_4in6(&a) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(CidrVal(a, n as u8))
}

fn mask(a: &IpAddr, bits: u8) -> IpAddr {
    match a {
        IpAddr::V4(v4) => {
            let m = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(*v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(*v6) & m))
        }
    }
}

fn cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("cidr", &args, 0)?;
    match parse_cidr(&s) {
        Ok(c) => opaque(c),
        Err(e) => Err(error(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )),
    }
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("isCIDR", &args, 0)?;
    bool_out(parse_cidr(&s).is_ok())
}

fn cidr_contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(net, bits), rest) = receiver::<CidrVal>("containsIP", &args)?;
    let a = match rest.first() {
        Some(Cel::String(s)) => parse_ip(s).map_err(|e| error("containsIP", e))?,
        Some(Cel::Opaque(o)) if o.downcast_ref::<IpVal>().is_some() => {
            o.downcast_ref::<IpVal>().map(|v| v.0).unwrap_or(net)
        }
        _ => return Err(no_overload("containsIP", &rest)),
    };
    bool_out(a.is_ipv4() == net.is_ipv4() && mask(&a, bits) == mask(&net, bits))
}

fn cidr_contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(net, bits), rest) = receiver::<CidrVal>("containsCIDR", &args)?;
    let other = match rest.first() {
        Some(Cel::String(s)) => parse_cidr(s).map_err(|e| {
            error(
                "containsCIDR",
                format!("network address parse error during conversion from string: {e}"),
            )
        })?,
        Some(Cel::Opaque(o)) if o.downcast_ref::<CidrVal>().is_some() => o
            .downcast_ref::<CidrVal>()
            .cloned()
            .unwrap_or(CidrVal(net, bits)),
        _ => return Err(no_overload("containsCIDR", &rest)),
    };
    bool_out(
        other.0.is_ipv4() == net.is_ipv4()
            && mask(&net, bits) == mask(&other.0, bits)
            && bits <= other.1,
    )
}

fn ip_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (IpVal(a), _) = receiver::<IpVal>("string", &args)?;
    out(Cel::String(Arc::new(a.to_string())))
}

fn cidr_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(a, bits), _) = receiver::<CidrVal>("string", &args)?;
    out(Cel::String(Arc::new(format!("{a}/{bits}"))))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(a, _), _) = receiver::<CidrVal>("ip", &args)?;
    opaque(IpVal(a))
}

fn cidr_prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(_, bits), _) = receiver::<CidrVal>("prefixLength", &args)?;
    out(Cel::Int(i64::from(bits)))
}

fn cidr_masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (CidrVal(a, bits), _) = receiver::<CidrVal>("masked", &args)?;
    opaque(CidrVal(mask(&a, bits), bits))
}

// ---------------------------------------------------------------------------------------------
// Formats (`format.dns1123Label().validate(s)`: none when valid, else the messages)

/// `kubernetes.NamedFormat`: one of upstream's constant formats, by its library name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FormatVal(&'static str);

impl Opaque for FormatVal {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// Upstream's constant formats, by the name `format.<name>()` and `format.named()` use.
const FORMATS: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// The messages of `s` against format `name` (empty when valid), as upstream's ValidateFuncs.
fn format_errors(name: &str, s: &str) -> Vec<String> {
    use k1s_apimachinery::validation as v;
    let strfmt = |format: &str, msg: &str| {
        if super::formats::valid(format, s) {
            Vec::new()
        } else {
            vec![msg.to_string()]
        }
    };
    match name {
        "dns1123Label" => v::name_is_dns_label(s, false),
        "dns1123Subdomain" => v::name_is_dns_subdomain(s, false),
        "dns1035Label" => v::name_is_dns1035_label(s, false),
        "qualifiedName" => v::is_qualified_name(s),
        "dns1123LabelPrefix" => v::name_is_dns_label(s, true),
        "dns1123SubdomainPrefix" => v::name_is_dns_subdomain(s, true),
        "dns1035LabelPrefix" => v::name_is_dns1035_label(s, true),
        "labelValue" => v::is_valid_label_value(s),
        "uri" => parse_url(s, true).err().into_iter().collect(),
        "uuid" => strfmt("uuid", "does not match the UUID format"),
        "byte" => strfmt("byte", "invalid base64"),
        "date" => strfmt("date", "invalid date"),
        _ => strfmt("datetime", "invalid datetime"),
    }
}

fn optional<'b, 'v>(v: Option<Cel>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    opaque(match v {
        Some(v) => cel::objects::OptionalValue::of(v),
        None => cel::objects::OptionalValue::none(),
    })
}

fn format_named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg("format.named", &args, 0)?;
    let found = FORMATS.iter().find(|f| **f == s.as_str());
    optional(found.map(|f| Cel::Opaque(Arc::new(FormatVal(f)))))
}

fn format_validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (FormatVal(name), rest) = receiver::<FormatVal>("validate", &args)?;
    let Some(Cel::String(s)) = rest.first() else {
        return Err(no_overload("validate", &rest));
    };
    let errs = format_errors(name, s);
    optional((!errs.is_empty()).then(|| {
        Cel::List(Arc::new(
            errs.into_iter().map(|e| Cel::String(Arc::new(e))).collect(),
        ))
    }))
}

/// `format.<name>()` for each constant format: cel-rust functions carry no data, so one
/// function per format.
macro_rules! constant_formats {
    ($($name:literal => $f:ident),+ $(,)?) => {
        $(fn $f<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            opaque(FormatVal($name))
        })+
        const FORMAT_FUNCTIONS: &[(&str, Function)] = &[$((concat!("format.", $name), $f)),+];
    };
}

constant_formats! {
    "dns1123Label" => format_dns1123_label,
    "dns1123Subdomain" => format_dns1123_subdomain,
    "dns1035Label" => format_dns1035_label,
    "qualifiedName" => format_qualified_name,
    "dns1123LabelPrefix" => format_dns1123_label_prefix,
    "dns1123SubdomainPrefix" => format_dns1123_subdomain_prefix,
    "dns1035LabelPrefix" => format_dns1035_label_prefix,
    "labelValue" => format_label_value,
    "uri" => format_uri,
    "uuid" => format_uuid,
    "byte" => format_byte,
    "date" => format_date,
    "datetime" => format_datetime,
}

fn register_formats(env: &mut Env) {
    for (name, f) in FORMAT_FUNCTIONS {
        if let Err(e) = env.add_overload(name, &format!("k8s_{name}"), vec![], *f) {
            tracing::warn!("CEL function {name}: {e}");
        }
    }
    if let Err(e) = env.add_overload(
        "format.named",
        "k8s_format_named",
        vec![STRING_TYPE],
        format_named,
    ) {
        tracing::warn!("CEL function format.named: {e}");
    }
    if let Err(e) = env.add_member_overload(
        "validate",
        "k8s_format_validate",
        DYN_TYPE,
        vec![STRING_TYPE],
        format_validate,
    ) {
        tracing::warn!("CEL function validate: {e}");
    }
}
