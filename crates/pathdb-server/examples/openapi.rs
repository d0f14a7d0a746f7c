//! Prints the server's OpenAPI document, without starting a server:
//!
//! ```sh
//! cargo run -q -p pathdb-server --example openapi > openapi.json
//! ```

fn main() {
    println!("{}", pathdb_server::openapi_json());
}
