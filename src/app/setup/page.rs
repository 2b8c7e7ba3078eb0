//! The HTML pages of `vibeloop setup`: the form that posts the manifest to GitHub, the page
//! after a successful registration, and the page that explains a problem.

use serde_json::Value;
use url::Url;

use super::Registered;

/// Escapes text for HTML element content and attribute values.
pub use crate::html::escape;

fn layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title} · vibeloop setup</title>\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem}}\
         code{{background:#f3f3f3;padding:0 .2em}}button{{font-size:1rem;padding:.4rem 1rem}}</style>\
         </head><body><h1>{title}</h1>\n{body}</body></html>\n",
        title = escape(title),
    )
}

/// The start page: what will be registered, and the button that posts the manifest.
pub fn start(action: &Url, manifest: &Value, owner: &str, env_file: &str) -> String {
    let list = |v: &Value| -> String {
        match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| format!("{}: {}", k, v.as_str().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(", "),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        }
    };
    let body = format!(
        "<p>This registers the GitHub App <b>{name}</b> for {owner}. GitHub will send its webhooks \
         to <code>{hook}</code>.</p>\n\
         <ul><li>Permissions: {perms}</li><li>Events: {events}</li></ul>\n\
         <form method=\"post\" action=\"{action}\">\n\
         <input type=\"hidden\" name=\"manifest\" value=\"{json}\">\n\
         <button type=\"submit\">Create the App on GitHub</button>\n</form>\n\
         <p>GitHub lets you change the name, then sends you back here; the App's credentials are \
         then written to <code>{env}</code> (mode 0600).</p>\n",
        name = escape(manifest["name"].as_str().unwrap_or_default()),
        owner = escape(owner),
        hook = escape(
            manifest["hook_attributes"]["url"]
                .as_str()
                .unwrap_or_default()
        ),
        perms = escape(&list(&manifest["default_permissions"])),
        events = escape(&list(&manifest["default_events"])),
        action = escape(action.as_str()),
        json = escape(&manifest.to_string()),
        env = escape(env_file),
    );
    layout("Register Vibeloop on GitHub", &body)
}

/// After the credentials are written: what was done and what to do next.
pub fn done(r: &Registered) -> String {
    let body = format!(
        "<p>GitHub registered the App <a href=\"{html}\">{slug}</a> (id {id}). Its credentials \
         are in <code>{env}</code> (mode 0600); keep that file private.</p>\n\
         <p>Next: <a href=\"{install}\">install the App</a> on the repositories it should work on, \
         then start the bot with that file:</p>\n<pre>{serve}</pre>\n\
         <p>This page's server has stopped; you can close the tab.</p>\n",
        html = escape(&r.html_url),
        slug = escape(&r.slug),
        id = r.app_id,
        env = escape(&r.env_file.display().to_string()),
        install = escape(&r.install_url()),
        serve = escape(&r.serve_command()),
    );
    layout("The App is registered", &body)
}

/// A problem, with what to do about it.
pub fn problem(title: &str, message: &str) -> String {
    layout(title, &format!("<p>{}</p>\n", escape(message)))
}
