//! Where a planted secret could hide: besides the secret itself, the forms it takes when
//! something encodes it (base64, as in HTTP Basic credentials; percent-encoding, as in a URL)
//! or cuts it (each half, as a wrapped line or a split field would leave it).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// Every form of `secret` a leak check looks for, named: the secret, its base64 (standard and
/// URL-safe), its percent-encoded form, and its two halves. Forms equal to an earlier one are
/// left out.
pub fn forms(secret: &str) -> Vec<(&'static str, String)> {
    assert!(
        secret.len() >= 16 && secret.is_ascii(),
        "a planted secret of at least 16 ASCII characters (each half must be unmistakable)"
    );
    let half = secret.len() / 2;
    let all = [
        ("the secret", secret.to_owned()),
        ("its base64", STANDARD.encode(secret)),
        ("its URL-safe base64", URL_SAFE_NO_PAD.encode(secret)),
        (
            "its percent-encoded form",
            utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
        ),
        ("its first half", secret[..half].to_owned()),
        ("its second half", secret[half..].to_owned()),
    ];
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (name, form) in all {
        if !out.iter().any(|(_, f)| *f == form) {
            out.push((name, form));
        }
    }
    out
}

/// Fails the test, naming `what` and the form, if `bytes` hold any form of `secret`.
pub fn assert_absent(secret: &str, what: &str, bytes: &[u8]) {
    for (name, form) in forms(secret) {
        let f = form.as_bytes();
        assert!(
            !bytes.windows(f.len()).any(|w| w == f),
            "{name} (`{form}`) appears in {what}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_found() {
        let key = "sk-test/with+odd=chars%&0123";
        let forms = forms(key);
        assert_eq!(forms.len(), 6, "{forms:?}");
        for (name, form) in &forms {
            let leak = format!("header: x{form}y");
            let r = std::panic::catch_unwind(|| assert_absent(key, "a leak", leak.as_bytes()));
            assert!(r.is_err(), "{name} is not found");
        }
        assert_absent(key, "a clean text", b"sk-test [redacted]");
    }
}
