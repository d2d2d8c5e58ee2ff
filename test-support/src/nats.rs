//! NATS credentials made by the test: an operator, an account and users with subject
//! permissions, as signed JWTs (NATS's decentralised authentication), so a test can start
//! `nats-server` in operator mode and hand each client a `.creds` file — what
//! `--nats-creds FILE` reads. Keys come from the `nkeys` crate; nothing is fetched.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use nkeys::KeyPair;
use serde_json::{Value, json};

/// An operator and one account: the server's configuration, and users' credentials.
pub struct Authority {
    operator: KeyPair,
    account: KeyPair,
    operator_jwt: String,
    account_jwt: String,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("operator", &self.operator.public_key())
            .field("account", &self.account.public_key())
            .finish_non_exhaustive()
    }
}

/// What a user may do: subjects it may publish to and subscribe to, and whether it may answer
/// the requests it receives (`allow_responses`, up to `responses` messages per request).
#[derive(Clone, Debug, Default)]
pub struct Permissions {
    /// Subjects it may publish to.
    pub publish: Vec<String>,
    /// Subjects it may subscribe to.
    pub subscribe: Vec<String>,
    /// Messages it may send to the reply subject of each request it receives (0: none beyond
    /// `publish`).
    pub responses: u32,
}

impl Permissions {
    /// May publish `publish`, subscribe `subscribe`, answer nothing.
    pub fn new(publish: &[&str], subscribe: &[&str]) -> Self {
        Permissions {
            publish: publish.iter().map(|s| (*s).to_owned()).collect(),
            subscribe: subscribe.iter().map(|s| (*s).to_owned()).collect(),
            responses: 0,
        }
    }

    /// May also send up to `n` messages in answer to each request received.
    pub fn answering(mut self, n: u32) -> Self {
        self.responses = n;
        self
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A JWT of `claims` (its `iss` and `iat` filled in), signed by `issuer`.
fn sign(issuer: &KeyPair, mut claims: Value) -> String {
    claims["iss"] = json!(issuer.public_key());
    claims["iat"] = json!(now());
    // A unique id; the server does not check how it was made.
    claims["jti"] = json!(format!("{}{}", claims["sub"].as_str().unwrap_or(""), now()));
    let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{body}");
    let sig = issuer
        .sign(signed.as_bytes())
        .expect("an ed25519 signature");
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig))
}

impl Authority {
    /// A new operator and account, with fresh keys.
    pub fn new() -> Authority {
        let operator = KeyPair::new_operator();
        let account = KeyPair::new_account();
        let operator_jwt = sign(
            &operator,
            json!({"name": "test-operator", "sub": operator.public_key(),
                   "nats": {"type": "operator", "version": 2}}),
        );
        let account_jwt = sign(
            &operator,
            json!({"name": "test-account", "sub": account.public_key(),
                   "nats": {"limits": {"subs": -1, "data": -1, "payload": -1, "imports": -1,
                                       "exports": -1, "wildcards": true, "conn": -1, "leaf": -1},
                            "default_permissions": {"pub": {}, "sub": {}},
                            "type": "account", "version": 2}}),
        );
        Authority {
            operator,
            account,
            operator_jwt,
            account_jwt,
        }
    }

    /// The `nats-server` configuration (operator mode, accounts resolved from memory) that
    /// trusts this operator. Start the server with `-c FILE`.
    pub fn server_conf(&self) -> String {
        format!(
            "operator: {}\nresolver: MEMORY\nresolver_preload: {{\n  {}: {}\n}}\n",
            self.operator_jwt,
            self.account.public_key(),
            self.account_jwt
        )
    }

    /// The text of a `.creds` file for a new user `name` of the account, with `perms`.
    pub fn user_creds(&self, name: &str, perms: &Permissions) -> String {
        let user = KeyPair::new_user();
        let mut nats = json!({"pub": {"allow": perms.publish}, "sub": {"allow": perms.subscribe},
                              "subs": -1, "data": -1, "payload": -1,
                              "type": "user", "version": 2});
        if perms.responses > 0 {
            nats["resp"] = json!({"max": perms.responses, "ttl": 0});
        }
        let jwt = sign(
            &self.account,
            json!({"name": name, "sub": user.public_key(), "nats": nats}),
        );
        let seed = user.seed().expect("a user seed");
        format!(
            "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\
             NKEYs are sensitive and should be treated as secrets.\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
        )
    }
}

impl Default for Authority {
    fn default() -> Self {
        Authority::new()
    }
}
