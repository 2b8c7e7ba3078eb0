//! Fresh PostgreSQL databases on the server `scripts/test` starts (`VIBELOOP_TEST_POSTGRES_URL`).

use sqlx::Connection as _;

/// The URL of a new, empty database.
pub async fn fresh_database() -> String {
    let base = std::env::var("VIBELOOP_TEST_POSTGRES_URL").expect(
        "VIBELOOP_TEST_POSTGRES_URL is not set: run the suite with scripts/test, which starts a throwaway PostgreSQL",
    );
    sqlx::any::install_default_drivers();
    let name = format!("vl_{:016x}", rand::random::<u64>());
    let mut admin = sqlx::AnyConnection::connect(&base)
        .await
        .expect("PostgreSQL answers");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let mut url = url::Url::parse(&base).unwrap();
    url.set_path(&name);
    url.to_string()
}
