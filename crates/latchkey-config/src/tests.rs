//! The configuration's loading and validation.

use super::*;

#[test]
fn defaults_are_valid_and_point_at_the_data_dir() {
    let c = Config::default();
    c.validate().unwrap();
    assert_eq!(c.database_url(), "sqlite://latchkey-data/latchkey.db");
    let urls = Urls::new(&c, c.listen);
    assert_eq!(urls.issuer, "https://localhost:8443", "a host name, which passkeys need");
    assert_eq!(urls.token, urls.issuer);
    let elsewhere = Urls::new(&c, "127.0.0.1:9443".parse().expect("address"));
    assert_eq!(elsewhere.issuer, "https://127.0.0.1:9443", "any other listener is named as it listens");
}

#[test]
fn env_overrides_the_file_and_flags_override_env() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latchkey.toml");
    std::fs::write(&file, "access_token_lifetime = 100\ncode_lifetime = 50\nscope_base = \"https://a\"").unwrap();
    let env = [
        ("LATCHKEY_CODE_LIFETIME".to_string(), "60".to_string()),
        ("LATCHKEY_REQUIRE_PKCE".into(), "false".into()),
        ("LATCHKEY_TEST_DATABASE_URL".into(), "ignored".into()),
        ("HOME".into(), "/root".into()),
    ];
    let mut flags = toml::Table::new();
    flags.insert("scope_base".into(), "https://b".into());
    let c = Config::load(Some(&file), env, flags).unwrap();
    assert_eq!((c.access_token_lifetime, c.code_lifetime, c.require_pkce), (100, 60, false));
    assert_eq!(c.scope_base, "https://b");
}

#[test]
fn every_field_is_listed() {
    let full = Config {
        database_url: Some("x".into()),
        tls_cert: Some("c".into()),
        tls_key: Some("k".into()),
        public_url: Some("https://x".into()),
        auth_url: Some("https://x".into()),
        token_url: Some("https://x".into()),
        api_base_url: Some("https://x".into()),
        app_check_jwks_file: Some("j".into()),
        app_check_jwks_url: Some("https://x/jwks".into()),
        app_check_jwks_ca_file: Some("ca.pem".into()),
        app_check_issuer: Some("https://x".into()),
        secrets_system: Some(SecretList::new(vec!["s".repeat(32)])),
        secrets_system_file: Some("secret".into()),
        ..Config::default()
    };
    let table = toml::Table::try_from(&full).unwrap();
    // Tables (`[events]`, `[rate_limits]`) take their variables by prefix (`LATCHKEY_EVENTS_*`), not from FIELDS.
    let mut keys: Vec<_> = table.iter().filter(|(_, v)| !v.is_table()).map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    let mut fields = FIELDS.to_vec();
    fields.sort_unstable();
    assert_eq!(keys, fields);
    let tables: Vec<_> = table.iter().filter(|(_, v)| v.is_table()).map(|(k, _)| k.as_str()).collect();
    assert_eq!(tables, TABLES.map(|(_, name)| name), "each table has its environment prefix");
}

#[test]
fn the_events_table_comes_from_toml_and_from_prefixed_variables() {
    let env = [
        ("LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH".to_string(), "true".to_string()),
        ("LATCHKEY_EVENTS_MAX_AGE_SECS".into(), "60".into()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latchkey.toml");
    std::fs::write(&file, "[events]\npush_timeout_secs = 3\nmax_age_secs = 5\n").unwrap();
    let c = Config::load(Some(&file), env, toml::Table::new()).unwrap();
    assert!(c.events.allow_insecure_loopback_push);
    assert_eq!((c.events.max_age_secs, c.events.push_timeout_secs), (60, 3));
    let unknown = [("LATCHKEY_EVENTS_NO_SUCH".to_string(), "1".to_string())];
    assert!(Config::load(None, unknown, toml::Table::new()).is_err(), "an unknown setting is refused");
    let zero = [("LATCHKEY_EVENTS_WORKER_INTERVAL_MS".to_string(), "0".to_string())];
    assert!(Config::load(None, zero, toml::Table::new()).is_err());
}

#[test]
fn the_rate_limits_table_comes_from_toml_and_from_prefixed_variables() {
    assert_eq!(
        Config::default().rate_limits,
        RateLimitsConfig {
            token_per_address: 600,
            token_per_client: 60_000,
            api_per_key: 600,
            register_per_address: 10
        }
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latchkey.toml");
    std::fs::write(&file, "[rate_limits]\ntoken_per_address = 30\ntoken_per_client = 90\n").unwrap();
    let env = [("LATCHKEY_RATE_LIMITS_TOKEN_PER_CLIENT".to_string(), "0".to_string())];
    let c = Config::load(Some(&file), env, toml::Table::new()).unwrap();
    let expected = RateLimitsConfig { token_per_address: 30, token_per_client: 0, ..RateLimitsConfig::default() };
    assert_eq!(c.rate_limits, expected);
    let negative = [("LATCHKEY_RATE_LIMITS_TOKEN_PER_ADDRESS".to_string(), "-1".to_string())];
    assert!(Config::load(None, negative, toml::Table::new()).is_err(), "a negative rate is refused");
    let unknown = [("LATCHKEY_RATE_LIMITS_PER_USER".to_string(), "1".to_string())];
    assert!(Config::load(None, unknown, toml::Table::new()).is_err(), "an unknown setting is refused");
}

#[test]
fn metrics_tokens_come_from_the_environment_or_a_file_and_are_checked() {
    assert!(!Config::default().metrics.enabled(), "/metrics is off until a token is set");
    let env = [("LATCHKEY_METRICS_TOKEN".to_string(), format!("{},{}", "a".repeat(16), "b".repeat(20)))];
    let c = Config::load(None, env, toml::Table::new()).unwrap();
    assert_eq!(c.metrics.tokens().unwrap(), vec!["a".repeat(16), "b".repeat(20)]);
    assert!(!format!("{c:?}").contains(&"a".repeat(16)), "the tokens are never printed");
    let short = [("LATCHKEY_METRICS_TOKEN".to_string(), "short".to_string())];
    assert!(Config::load(None, short, toml::Table::new()).is_err(), "a short token is refused");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{}\n\nshort\n", "c".repeat(32))).unwrap();
    let env = [("LATCHKEY_METRICS_TOKEN_FILE".to_string(), file.display().to_string())];
    let c = Config::load(None, env, toml::Table::new()).unwrap();
    assert_eq!(c.metrics.tokens().unwrap(), vec!["c".repeat(32)], "one token a line; short lines are skipped");
    let both = [
        ("LATCHKEY_METRICS_TOKEN_FILE".to_string(), "f".to_string()),
        ("LATCHKEY_METRICS_TOKEN".to_string(), "d".repeat(16)),
    ];
    assert!(Config::load(None, both, toml::Table::new()).is_err(), "token and token_file are exclusive");
}

#[test]
fn the_database_pool_is_configurable_and_checked() {
    let env = [
        ("LATCHKEY_DATABASE_URL".to_string(), "postgres://u@db:5432/latchkey".to_string()),
        ("LATCHKEY_DATABASE_MAX_CONNECTIONS".into(), "4".into()),
        ("LATCHKEY_DATABASE_ACQUIRE_TIMEOUT".into(), "1".into()),
    ];
    let c = Config::load(None, env, toml::Table::new()).unwrap();
    assert_eq!(c.database_url(), "postgres://u@db:5432/latchkey");
    let pool = c.pool_settings();
    assert_eq!((pool.max_connections, pool.acquire_timeout.as_secs()), (4, 1));
    assert!(Config { database_max_connections: 0, ..Config::default() }.validate().is_err());
    assert!(Config { database_acquire_timeout: 0, ..Config::default() }.validate().is_err());
    assert!(Config { database_url: Some("mysql://x".into()), ..Config::default() }.validate().is_err());
}

#[test]
fn system_secrets_come_comma_separated_from_the_environment_or_as_a_toml_array_and_are_never_printed() {
    let (a, b) = ("a".repeat(32), "b".repeat(40));
    let env = [("LATCHKEY_SECRETS_SYSTEM".to_string(), format!("{a}, {b}"))];
    let c = Config::load(None, env, toml::Table::new()).unwrap();
    let list = c.secrets_system.clone().unwrap();
    assert_eq!(list.expose(), [a.clone(), b.clone()]);
    assert!(!format!("{c:?}").contains(&a), "Debug redacts the secrets");
    let t: Config = toml::from_str(&format!("secrets_system = [\"{b}\", \"{a}\"]")).unwrap();
    assert_eq!(t.secrets_system.unwrap().expose(), [b, a]);
    let short = Config { secrets_system: Some(SecretList::new(vec!["short".into()])), ..Config::default() };
    assert!(short.validate().unwrap_err().0.contains("at least 32"));
    let both = Config { secrets_system_file: Some("f".into()), ..c };
    assert!(both.validate().unwrap_err().0.contains("not both"));
}

#[test]
fn the_sqlite_file_is_found_in_the_database_url() {
    assert_eq!(Config::default().sqlite_path(), Some(PathBuf::from("latchkey-data/latchkey.db")));
    let at = |url: &str| Config { database_url: Some(url.into()), ..Config::default() }.sqlite_path();
    assert_eq!(at("sqlite:/srv/lk.db?mode=rwc"), Some(PathBuf::from("/srv/lk.db")));
    assert_eq!(at("postgres://u@db/latchkey"), None);
}

#[test]
fn toml_fields_are_checked() {
    let c: Config = toml::from_str("listen = \"0.0.0.0:9000\"\npublic_url = \"https://id.example\"").unwrap();
    assert_eq!(Urls::new(&c, c.listen).issuer, "https://id.example");
    assert!(toml::from_str::<Config>("no_such_field = 1").is_err());
    let bad = Config { public_url: Some("http://x".into()), ..Config::default() };
    assert!(bad.validate().is_err());
}

#[test]
fn an_external_app_check_provider_needs_one_key_source_over_https_and_an_issuer() {
    let issuer = Some("https://appcheck.example".to_string());
    let url = Some("https://appcheck.example/jwks".to_string());
    let ok = Config { app_check_jwks_url: url.clone(), app_check_issuer: issuer.clone(), ..Config::default() };
    ok.validate().unwrap();
    let plain = Config { app_check_jwks_url: Some("http://appcheck.example/jwks".into()), ..ok.clone() };
    assert!(plain.validate().unwrap_err().0.contains("https://"));
    let both = Config { app_check_jwks_file: Some("j.json".into()), ..ok.clone() };
    assert!(both.validate().unwrap_err().0.contains("not both"));
    let no_issuer = Config { app_check_issuer: None, ..ok.clone() };
    assert!(no_issuer.validate().is_err());
    let issuer_alone = Config { app_check_issuer: issuer, ..Config::default() };
    assert!(issuer_alone.validate().is_err());
    let hasty = Config { app_check_jwks_refresh_secs: 5, ..ok };
    assert!(hasty.validate().unwrap_err().0.contains("at least 60"));
}
