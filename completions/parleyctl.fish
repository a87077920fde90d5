function __parleyctl_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __parleyctl_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __parleyctl_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __parleyctl_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __parleyctl_parse_tokens -S
    set -l unparsed_tokens (__parleyctl_tokens -pc)
    switch $unparsed_tokens[1]
    case 'parleyctl'
        __parleyctl_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'browse'
            __parleyctl_parse_subcommand 0 'timeout=' 'type=' 'domain=+' 'log-level=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'send'
            __parleyctl_parse_subcommand 2 'direct' 'peer=+' 'no-discovery' 'service-type=' 'name=' 'secret-file=' 'log-level=' 'socket=' 'to=' 'wait-peer=' 'reply' 'reply-timeout=' 'output=' 'force' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'listen'
            __parleyctl_parse_subcommand 0 'type=+' 'port=' 'direct' 'peer=+' 'no-discovery' 'service-type=' 'name=' 'secret-file=' 'log-level=' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'peers'
            __parleyctl_parse_subcommand 0 'wait=' 'wait-for=' 'direct' 'peer=+' 'no-discovery' 'service-type=' 'name=' 'secret-file=' 'log-level=' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'status'
            __parleyctl_parse_subcommand 0 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'reload'
            __parleyctl_parse_subcommand 0 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'sessions'
            __parleyctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __parleyctl_parse_subcommand 0 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
            case 'delete'
                __parleyctl_parse_subcommand -r 1 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
            case 'prune'
                __parleyctl_parse_subcommand 0 'older-than=' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
            end
        case 'history'
            __parleyctl_parse_subcommand 0 'session=' 'filter=' 'action=' 'after=' 'limit=' 'last=' 'since=' 'follow' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'show'
            __parleyctl_parse_subcommand 1 'state' 'image=' 'force' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'diff'
            __parleyctl_parse_subcommand 2 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'replay'
            __parleyctl_parse_subcommand 1 'to=' 'all' 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'export'
            __parleyctl_parse_subcommand 2 'force' 'socket=' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'import'
            __parleyctl_parse_subcommand 1 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'filters'
            __parleyctl_parse_subcommand 0 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'drawer'
            __parleyctl_parse_subcommand 1 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'set'
            __parleyctl_parse_subcommand -r 3 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'invoke'
            __parleyctl_parse_subcommand 2 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'secret'
            __parleyctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'generate'
                __parleyctl_parse_subcommand 0 'output=' 'force' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
            end
        case 'web'
            __parleyctl_parse_subcommand 0 'socket=' 'json' 'verbose' 'no-color' 'no-pager' 'version' 'h/help'
        case 'help'
            __parleyctl_parse_subcommand -r 1 'version'
        end
    end
end

function __parleyctl_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __parleyctl_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __parleyctl_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __parleyctl_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__parleyctl_tokens -p)
    if test -z "$(__parleyctl_tokens -t)"
        set -l index (count (__parleyctl_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'parleyctl' -f
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'browse' -d 'List the services of a type on the LAN, straight from avahi-daemon (no parleyd needed).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'send' -d 'Send a typed message to a peer; with --reply, print its answer.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'listen' -d 'Print incoming messages (of the given types, or all) until interrupted.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'peers' -d 'List the peers: name, id, addresses, connected or not and since when, messages in and out.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'status' -d 'Show parleyd\'s name, port, advertisement, discovery state, peer count and uptime.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'reload' -d 'Make parleyd re-read its configuration, as SIGHUP does.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'sessions' -d 'List, delete and prune the debugger\'s sessions.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'history' -d 'List recorded states: sequence number, time, session, action and sizes.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'show' -d 'Show one recorded state: its action, time, session and the state itself.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'diff' -d 'Show what changed between two recorded states, property by property.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'replay' -d 'Send a recorded state back to an app, which applies it (time travel).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'export' -d 'Write a session\'s history to a file, as JSON lines.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'import' -d 'Read a file written by `parleyctl export` into the history, as a new session.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'filters' -d 'List the action filters saved by name in parleyd\'s configuration.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'drawer' -d 'List connected apps\' debug drawers: their settings and actions, with current values.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'set' -d 'Set a setting of an app\'s debug drawer.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'invoke' -d 'Run an action of an app\'s debug drawer and print what the app answers.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'secret' -d 'Manage the shared secret that LAN peers must prove to each other.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'web' -d 'Print the URL of parleyd\'s web debugger.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" timeout' -l 'timeout' -d 'Seconds to browse before printing.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" type' -l 'type' -d 'DNS-SD service type.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse"' -l 'domain' -d 'A unicast DNS domain to browse as well as the link (repeatable).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" log-level' -l 'log-level' -d 'Log level on standard error: trace, debug, info, notice, warning, error or critical.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl browse" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" direct' -l 'direct' -d 'Run a transceiver in this process instead of going through parleyd.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send"' -l 'peer' -d 'With --direct: connect to this peer (HOST:PORT, [IPv6]:PORT); repeatable. Turns discovery off.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" no-discovery' -l 'no-discovery' -d 'With --direct: do not use avahi-daemon; only --peer endpoints (and peers connecting to us) count.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" service-type' -l 'service-type' -d 'DNS-SD service type to discover peers on.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" name' -l 'name' -d 'Name this tool gives in the handshake.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" secret-file' -l 'secret-file' -d 'With --direct: the shared secret file of the nodes to talk to (as parleyd\'s secretFile).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" log-level' -l 'log-level' -d 'Log level on standard error: trace, debug, info, notice, warning, error or critical.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" to' -l 'to' -d 'Send to the peer with this name or peer-id prefix (default: the peer whose hello accepts TYPE; when several do, send names them and asks for --to).' -rfka '(__parleyctl_custom_completion ---completion send -- --to (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" wait-peer' -l 'wait-peer' -d 'Seconds to wait for the peer (default 20). Without it, send fails at once when peers are connected and none is the one wanted; with it, send waits for one to come.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" reply' -l 'reply' -d 'Send a request and print the reply.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" reply-timeout' -l 'reply-timeout' -d 'Seconds to wait for the reply.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" output' -l 'output' -d 'With --reply: write the bytes of a data reply to this file (- for standard output).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" force' -l 'force' -d 'With --output FILE: overwrite FILE if it exists.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl send" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen"' -l 'type' -d 'A message type name to print; repeatable. Without it, every type is printed.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" port' -l 'port' -d 'With --direct: TCP port to listen on for peers (0: any free port).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" direct' -l 'direct' -d 'Run a transceiver in this process instead of going through parleyd.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen"' -l 'peer' -d 'With --direct: connect to this peer (HOST:PORT, [IPv6]:PORT); repeatable. Turns discovery off.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" no-discovery' -l 'no-discovery' -d 'With --direct: do not use avahi-daemon; only --peer endpoints (and peers connecting to us) count.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" service-type' -l 'service-type' -d 'DNS-SD service type to discover peers on.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" name' -l 'name' -d 'Name this tool gives in the handshake.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" secret-file' -l 'secret-file' -d 'With --direct: the shared secret file of the nodes to talk to (as parleyd\'s secretFile).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" log-level' -l 'log-level' -d 'Log level on standard error: trace, debug, info, notice, warning, error or critical.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl listen" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" wait' -l 'wait' -d 'With --direct: seconds to discover and connect before listing; with --wait-for: seconds to wait.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" wait-for' -l 'wait-for' -d 'Wait until this peer (name or id prefix) is connected, then list.' -rfka '(__parleyctl_custom_completion ---completion peers -- --wait-for (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" direct' -l 'direct' -d 'Run a transceiver in this process instead of going through parleyd.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers"' -l 'peer' -d 'With --direct: connect to this peer (HOST:PORT, [IPv6]:PORT); repeatable. Turns discovery off.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" no-discovery' -l 'no-discovery' -d 'With --direct: do not use avahi-daemon; only --peer endpoints (and peers connecting to us) count.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" service-type' -l 'service-type' -d 'DNS-SD service type to discover peers on.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" name' -l 'name' -d 'Name this tool gives in the handshake.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" secret-file' -l 'secret-file' -d 'With --direct: the shared secret file of the nodes to talk to (as parleyd\'s secretFile).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" log-level' -l 'log-level' -d 'Log level on standard error: trace, debug, info, notice, warning, error or critical.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl peers" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl reload" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl sessions" -eq 1' -fa 'list' -d 'List the debugger\'s sessions: one per app connection (the default).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl sessions" -eq 1' -fa 'delete' -d 'Delete ended sessions with all their entries.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl sessions" -eq 1' -fa 'prune' -d 'Delete every session that ended longer ago than a given time.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl sessions delete" -ge 1' -fka '(__parleyctl_custom_completion ---completion sessions delete -- positional@0 (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" older-than' -l 'older-than' -d 'Sessions that ended before this long ago: 90s, 30m, 12h, 7d.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl sessions prune" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" session' -l 'session' -d 'Only this session\'s entries.' -rfka '(__parleyctl_custom_completion ---completion history -- --session (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" filter' -l 'filter' -d 'A filter saved by name in parleyd\'s configuration (actionFilters).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" action' -l 'action' -d 'Only actions whose text matches this glob (* and ?).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" after' -l 'after' -d 'Start after this sequence number.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" limit' -l 'limit' -d 'Print at most this many entries (with --follow: then exit).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" last' -l 'last' -d 'Only the last N entries (of those the other options select).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" since' -l 'since' -d 'Only entries recorded since: 10m (ago), 17:05, 2026-11-25 17:05, RFC 3339.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" follow' -l 'follow' -d 'After the listing, print entries as they are recorded.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl history" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" state' -l 'state' -d 'Print only the state, byte for byte as recorded.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" image' -l 'image' -d 'Write the screenshot (PNG) to this file; - writes it to standard output, alone.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" force' -l 'force' -d 'With --image FILE: overwrite FILE if it exists.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" to' -l 'to' -d 'A connected app: name, peer id or id prefix.' -rfka '(__parleyctl_custom_completion ---completion replay -- --to (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" all' -l 'all' -d 'Send to every connected debugger app.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl replay" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl export" -eq 1' -fka '(__parleyctl_custom_completion ---completion export -- positional@0 (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" force' -l 'force' -d 'Overwrite FILE if it exists.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl filters" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl drawer" -eq 1' -fka '(__parleyctl_custom_completion ---completion drawer -- positional@0 (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl drawer" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl set" -eq 1' -fka '(__parleyctl_custom_completion ---completion set -- positional@0 (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl set" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl invoke" -eq 1' -fka '(__parleyctl_custom_completion ---completion invoke -- positional@0 (count (__parleyctl_tokens -pc)) (__parleyctl_tokens -tC))'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl invoke" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_positional "parleyctl secret" -eq 1' -fa 'generate' -d 'Make a new random shared secret (32 bytes, as 64 hex digits).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" output' -l 'output' -d 'Write the secret to this file (mode 0600); - for standard output.' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" force' -l 'force' -d 'Replace the file if it exists.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl secret generate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" socket' -l 'socket' -d 'parleyd\'s control socket (default: parleyd\'s own default: $RUNTIME_DIRECTORY/parleyd.sock, /run/parley/parleyd.sock for root, else $XDG_RUNTIME_DIR/parley/parleyd.sock).' -rfka ''
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" json' -l 'json' -d 'Print JSON, one object per line.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" verbose' -l 'verbose' -d 'On failure, also print the causes: protocol error codes, the peer, the underlying error.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" no-color' -l 'no-color' -d 'No colour, even on a terminal (NO_COLOR in the environment does the same).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" no-pager' -l 'no-pager' -d 'Write long output straight to the terminal, not through $PAGER (default less).'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" version' -l 'version' -d 'Show the version.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl web" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'parleyctl' -n '__parleyctl_should_offer_completions_for_flags_or_options "parleyctl help" version' -l 'version' -d 'Show the version.'
