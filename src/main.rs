//! The `vibeloop` binary: parses the command line and hands over to [`vibeloop::app`].

use std::process::ExitCode;

use clap::Parser as _;
use vibeloop::config::{Cli, Command, ServeConfig};

/// Each runtime thread's stack. A ticket's step runs as one task whose polls nest deep (worker,
/// flow, node, role, tool, sandbox, the engine's client), and a debug build gives every await
/// point its own room in each frame: that chain passed tokio's 2 MiB default. Only what is
/// touched is ever backed by memory.
const THREAD_STACK: usize = 16 << 20;

fn main() -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK)
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let mut cli = Cli::parse();
    if let Err(e) = cli.resolve_paths() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Serve(args) => match ServeConfig::from_args(&args) {
            Ok(config) => {
                vibeloop::app::init_logging(config.json_logs);
                vibeloop::app::serve(config).await
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        Command::Migrate(args) => {
            vibeloop::app::init_logging(false);
            vibeloop::app::migrate(&args).await
        }
        Command::Gates(args) => match vibeloop::app::gates::run(&args).await {
            Ok(code) => return ExitCode::from(code as u8),
            Err(e) => Err(e),
        },
        Command::Setup(args) => vibeloop::app::setup::run(&args).await,
        Command::Doctor(args) => match vibeloop::app::doctor::run(&args).await {
            Ok(code) => return ExitCode::from(code as u8),
            Err(e) => Err(e),
        },
        #[cfg(feature = "forge")]
        Command::Run(args) => match vibeloop::app::run::run(&args).await {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        Command::Eval(args) => match vibeloop::app::eval::run(&args).await {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        #[cfg(not(feature = "forge"))]
        Command::Run(_) => {
            eprintln!(
                "error: this vibeloop was built without `vibeloop run` (the `forge` feature); rebuild with the default features"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
