//! The per-session token of the rating and survey forms: the page reads it
//! from its own server (`GET /session`, which a page of another site cannot
//! read: no CORS header is ever sent) and sends it with every post, so that a
//! post made by another site, which can send a request but not read a reply,
//! is refused even where a browser sends no `Origin`.

use rand::Rng;

/// The header a page sends its token in.
pub const HEADER: &str = "x-mbag-token";

/// A random token, new for each server run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionToken(String);

impl SessionToken {
    /// A fresh token: 128 random bits as hex.
    pub fn random() -> Self {
        Self(format!("{:032x}", rand::rng().random::<u128>()))
    }

    /// The token as the page sends it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `sent` (a request's header value) is this token, compared
    /// in time that does not depend on where they differ.
    pub fn accepts(&self, sent: &[u8]) -> bool {
        let want = self.0.as_bytes();
        sent.len() == want.len()
            && sent
                .iter()
                .zip(want)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_and_accept_only_themselves() {
        let a = SessionToken::random();
        let b = SessionToken::random();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert!(a.accepts(a.as_str().as_bytes()));
        assert!(!a.accepts(b.as_str().as_bytes()));
        assert!(!a.accepts(b""));
        assert!(!a.accepts(&a.as_str().as_bytes()[..31]));
    }
}
