//! The service-account key file: the JSON the operator hands a content owner's tool once, in the field
//! names of the best-known provider's service-account key files, so that its client libraries load it unmodified.
//! latchkey keeps only the public half of the key.

use serde::{Deserialize, Serialize};

/// The `type` of a service-account key file.
pub const SERVICE_ACCOUNT: &str = "service_account";

/// A service-account key file.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFile {
    /// Always [`SERVICE_ACCOUNT`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The service account's project.
    pub project_id: String,
    /// The key's id: the `kid` of the assertions it signs.
    pub private_key_id: String,
    /// The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub private_key: String,
    /// The service account's identifier: the assertions' `iss`.
    pub client_email: String,
    /// The service account's numeric-looking id.
    pub client_id: String,
    /// Where browser flows start (the provider's libraries read it; service accounts do not use it).
    pub auth_uri: String,
    /// The token endpoint: the assertions' `aud`, where they are exchanged.
    pub token_uri: String,
}

impl std::fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFile")
            .field("client_email", &self.client_email)
            .field("private_key_id", &self.private_key_id)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_providers_field_names_round_trip_and_the_private_key_stays_out_of_debug() {
        let file = KeyFile {
            kind: SERVICE_ACCOUNT.into(),
            project_id: "p".into(),
            private_key_id: "k1".into(),
            private_key: "-----BEGIN PRIVATE KEY-----\nMII...\n-----END PRIVATE KEY-----\n".into(),
            client_email: "sa@p.iam.latchkey.dev".into(),
            client_id: "1234".into(),
            auth_uri: "https://127.0.0.1:8443/o/oauth2/v2/auth".into(),
            token_uri: "https://127.0.0.1:8443/token".into(),
        };
        let json = serde_json::to_value(&file).unwrap();
        for field in ["type", "project_id", "private_key_id", "private_key", "client_email", "client_id", "token_uri"] {
            assert!(json.get(field).is_some(), "{field}");
        }
        assert_eq!(json["type"], "service_account");
        assert_eq!(serde_json::from_value::<KeyFile>(json).unwrap(), file);
        assert!(!format!("{file:?}").contains("PRIVATE KEY"));
    }
}
