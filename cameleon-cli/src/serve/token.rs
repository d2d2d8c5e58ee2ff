//! The server's secret: drawn from the operating system's generator unless `--token T` gives
//! one, carried by a request as a cookie, an `Authorization: Bearer` header or (GET only) a
//! `?token=` query, and compared in constant time (docs/cli.md, "serve").

use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::{HeaderMap, HeaderValue};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Bytes of a generated token: 192 bits, written as 48 hexadecimal digits.
const GENERATED_BYTES: usize = 24;

/// What is percent-encoded in the printed address and the cookie: everything but RFC 3986's
/// unreserved characters, so `+ / = % &` in a `--token` survive both.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The server's secret.
#[derive(Clone)]
pub(crate) struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)") // never in a log
    }
}

impl Token {
    /// The token `--token T` gives.
    pub(crate) fn given(t: String) -> Token {
        Token(t)
    }

    /// A fresh token of [`GENERATED_BYTES`] from the operating system's generator.
    pub(crate) fn generate() -> std::io::Result<Token> {
        let mut bytes = [0u8; GENERATED_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            std::io::Error::other(format!("no random token from the operating system: {e}"))
        })?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The token itself, to print once for the user who started the server.
    pub(crate) fn reveal(&self) -> &str {
        &self.0
    }

    /// The token, percent-encoded for a query or a cookie.
    pub(crate) fn encoded(&self) -> String {
        utf8_percent_encode(&self.0, ENCODED).to_string()
    }

    /// Whether `candidate` is the token, in time that depends only on the lengths.
    pub(crate) fn matches(&self, candidate: &str) -> bool {
        same_secret(candidate.as_bytes(), self.0.as_bytes())
    }
}

/// Equal, in time that depends only on the lengths: the token check must not tell how much of
/// a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The credentials a request carries, each as sent (the query's and the cookie's
/// percent-decoded).
#[derive(Debug, Default)]
pub(crate) struct Presented {
    /// `Authorization: Bearer T`.
    pub(crate) bearer: Option<String>,
    /// The cookie named `cookie`.
    pub(crate) cookie: Option<String>,
    /// `?token=T`.
    pub(crate) query: Option<String>,
}

impl Presented {
    /// What `headers` and `query` carry; `cookie` is the cookie's name.
    pub(crate) fn read(headers: &HeaderMap, query: Option<&str>, cookie: &str) -> Presented {
        Presented {
            bearer: headers
                .get_all(AUTHORIZATION)
                .iter()
                .find_map(|v| bearer(v).map(str::to_owned)),
            cookie: headers
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|kv| kv.trim().split_once('='))
                .find(|(k, _)| *k == cookie)
                .map(|(_, v)| decode(v)),
            query: query.and_then(|q| {
                q.split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(k, _)| *k == "token")
                    .map(|(_, v)| decode(v))
            }),
        }
    }
}

/// `T` of `Bearer T` (the scheme in any case).
fn bearer(v: &HeaderValue) -> Option<&str> {
    let v = v.to_str().ok()?;
    let (scheme, t) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| t.trim())
}

/// Percent-decoded (`+` stays `+`: the printed address encodes it as `%2B`).
fn decode(v: &str) -> String {
    percent_decode_str(v).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_equal_only_when_equal() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cret", b"s3cres"));
        assert!(!same_secret(b"s3cret", b"s3cre"));
        assert!(!same_secret(b"", b"x"));
    }

    #[test]
    fn a_generated_token_has_192_bits_and_two_differ() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.0.len(), 48);
        assert!(a.0.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.0, b.0);
        assert_eq!(a.encoded(), a.0, "hexadecimal needs no encoding");
    }

    #[test]
    fn a_token_with_reserved_characters_survives_the_address_and_the_cookie() {
        let t = Token::given("a+b/c=d%e&f g".into());
        let enc = t.encoded();
        assert_eq!(enc, "a%2Bb%2Fc%3Dd%25e%26f%20g");
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            format!("other=1; cameleon_token_80={enc}").parse().unwrap(),
        );
        h.insert(AUTHORIZATION, "bearer  x+y ".parse().unwrap());
        let query = format!("a=1&token={enc}");
        let p = Presented::read(&h, Some(&query), "cameleon_token_80");
        assert!(t.matches(p.query.as_deref().unwrap()), "{p:?}");
        assert!(t.matches(p.cookie.as_deref().unwrap()), "{p:?}");
        assert_eq!(p.bearer.as_deref(), Some("x+y"));
        let none = Presented::read(&HeaderMap::new(), Some("tokens=1"), "c");
        assert!(none.bearer.is_none() && none.cookie.is_none() && none.query.is_none());
    }
}
