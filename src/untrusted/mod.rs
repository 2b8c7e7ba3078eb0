//! What nobody vouches for, and the two ways the bot handles it: text a model or a repository
//! wrote goes into a prompt only framed as data ([`fence`]), and files a sandbox's commands
//! wrote are read on the host through no link, no special file and within a size cap
//! ([`files`]).

pub mod fence;
pub mod files;
