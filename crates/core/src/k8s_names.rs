//! Kubernetes name formats as apimachinery checks them (IsDNS1123Label,
//! IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue, domain-prefixed
//! paths), with apimachinery's exact messages.

use std::fmt::Write as _;

use crate::go_text::go_quote;
use crate::violation::{Violation, invalid, required};

// Limits and names from apimachinery's format checks.
const DNS1123_LABEL_MAX_LENGTH: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
const LABEL_KEY_NAME_MAX_LENGTH: usize = 63;
const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

pub(crate) fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{format}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        let _ = write!(out, "'{example}', ");
    }
    let _ = write!(out, "regex used for validation is '{format}')");
    out
}

pub(crate) fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

pub(crate) fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
        }
        _ => false,
    }
}

pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

pub(crate) fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX_LENGTH {
        msgs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label(s) {
        if is_dns1123_subdomain(s) {
            msgs.push("must not contain dots".to_string());
        } else {
            msgs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    msgs
}

pub(crate) fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        msgs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain(s) {
        msgs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    msgs
}

/// The name part of a label key: alphanumerics at both ends, `-_.` allowed inside.
pub(crate) fn is_label_key_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut msgs = Vec::new();
    let name = match value.split_once('/') {
        None => value,
        Some((_, rest)) if rest.contains('/') => {
            msgs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
            ));
            return msgs;
        }
        Some((prefix, rest)) => {
            if prefix.is_empty() {
                msgs.push("prefix part must be non-empty".to_string());
            } else {
                msgs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            rest
        }
    };
    if name.is_empty() {
        msgs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_KEY_NAME_MAX_LENGTH {
        msgs.push(format!(
            "name part {}",
            max_len_error(LABEL_KEY_NAME_MAX_LENGTH)
        ));
    }
    if !is_label_key_name(name) {
        msgs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
        ));
    }
    msgs
}

pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        msgs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_label_key_name(value) {
        msgs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    msgs
}

/// apimachinery's IsDomainPrefixedPath, e.g. `acme.io/foo`.
pub(crate) fn domain_prefixed_path(field: &str, value: &str, errs: &mut Vec<Violation>) {
    if value.is_empty() {
        errs.push(required(field, ""));
        return;
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        errs.push(invalid(
            field,
            go_quote(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for msg in dns1123_subdomain_errors(host) {
        errs.push(invalid(field, go_quote(host), msg));
    }
    let path_ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !path_ok {
        errs.push(invalid(
            field,
            go_quote(path),
            regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
}
