#!/bin/bash

__parleyctl_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__parleyctl_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__parleyctl_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__parleyctl_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_parleyctl() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __parleyctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    browse|send|listen|peers|status|reload|sessions|history|show|diff|replay|export|import|filters|logs|traces|trace|drawer|set|invoke|secret|web|otel-env|devices|pair|unpair|help)
        # Offer subcommand argument completions
        "_parleyctl_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'browse send listen peers status reload sessions history show diff replay export import filters logs traces trace drawer set invoke secret web otel-env devices pair unpair help' -- "${cur}"))
        ;;
    esac
}

_parleyctl_browse() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=(--domain)
    non_repeating_options=(--timeout --type --log-level)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--timeout')
        return
        ;;
    '--type')
        return
        ;;
    '--domain')
        return
        ;;
    '--log-level')
        return
        ;;
    esac
}

_parleyctl_send() {
    repeating_flags=()
    non_repeating_flags=(--direct --no-discovery --paired --reply --force --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=(--peer)
    non_repeating_options=(--service-type --name --secret-file --debugger --device-directory --log-level --socket --to --wait-peer --reply-timeout --output)
    __parleyctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--peer')
        return
        ;;
    '--service-type')
        return
        ;;
    '--name')
        return
        ;;
    '--secret-file')
        return
        ;;
    '--debugger')
        return
        ;;
    '--device-directory')
        return
        ;;
    '--log-level')
        return
        ;;
    '--socket')
        return
        ;;
    '--to')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion send -- --to "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '--wait-peer')
        return
        ;;
    '--reply-timeout')
        return
        ;;
    '--output')
        return
        ;;
    esac
}

_parleyctl_listen() {
    repeating_flags=()
    non_repeating_flags=(--direct --no-discovery --paired --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=(--type --peer)
    non_repeating_options=(--port --service-type --name --secret-file --debugger --device-directory --log-level --socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--type')
        return
        ;;
    '--port')
        return
        ;;
    '--peer')
        return
        ;;
    '--service-type')
        return
        ;;
    '--name')
        return
        ;;
    '--secret-file')
        return
        ;;
    '--debugger')
        return
        ;;
    '--device-directory')
        return
        ;;
    '--log-level')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_peers() {
    repeating_flags=()
    non_repeating_flags=(--direct --no-discovery --paired --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=(--peer)
    non_repeating_options=(--wait --wait-for --service-type --name --secret-file --debugger --device-directory --log-level --socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--wait')
        return
        ;;
    '--wait-for')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion peers -- --wait-for "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '--peer')
        return
        ;;
    '--service-type')
        return
        ;;
    '--name')
        return
        ;;
    '--secret-file')
        return
        ;;
    '--debugger')
        return
        ;;
    '--device-directory')
        return
        ;;
    '--log-level')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_status() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_reload() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_sessions() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __parleyctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|delete|prune)
        # Offer subcommand argument completions
        "_parleyctl_sessions_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list delete prune' -- "${cur}"))
        ;;
    esac
}

_parleyctl_sessions_list() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_sessions_delete() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion sessions delete -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_sessions_prune() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--older-than --socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--older-than')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_history() {
    repeating_flags=()
    non_repeating_flags=(--follow --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--session --filter --action --after --limit --last --since --socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--session')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion history -- --session "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '--filter')
        return
        ;;
    '--action')
        return
        ;;
    '--after')
        return
        ;;
    '--limit')
        return
        ;;
    '--last')
        return
        ;;
    '--since')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_show() {
    repeating_flags=()
    non_repeating_flags=(--state --force --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--image --socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--image')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_diff() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_replay() {
    repeating_flags=()
    non_repeating_flags=(--all --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--to --socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--to')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion replay -- --to "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_export() {
    repeating_flags=()
    non_repeating_flags=(--har --force --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(-o --output --socket)
    __parleyctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '-o'|'--output')
        return
        ;;
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion export -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_import() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_filters() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_logs() {
    repeating_flags=()
    non_repeating_flags=(-f --follow --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--session --level --label --grep --since -n --lines --socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--session')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion logs -- --session "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '--level')
        return
        ;;
    '--label')
        return
        ;;
    '--grep')
        return
        ;;
    '--since')
        return
        ;;
    '-n'|'--lines')
        return
        ;;
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion logs -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_traces() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--session -n --limit --socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--session')
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion traces -- --session "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    '-n'|'--limit')
        return
        ;;
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion traces -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_trace() {
    repeating_flags=()
    non_repeating_flags=(-v --attributes --json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_drawer() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion drawer -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_set() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion set -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_invoke() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __parleyctl_add_completions -W "$(__parleyctl_custom_complete ---completion invoke -- positional@0 "${COMP_CWORD}" "$(__parleyctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_parleyctl_secret() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __parleyctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    generate)
        # Offer subcommand argument completions
        "_parleyctl_secret_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'generate' -- "${cur}"))
        ;;
    esac
}

_parleyctl_secret_generate() {
    repeating_flags=()
    non_repeating_flags=(--force --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--output)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--output')
        return
        ;;
    esac
}

_parleyctl_web() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_otel-env() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--token-file --timeout --type --socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--token-file')
        return
        ;;
    '--timeout')
        return
        ;;
    '--type')
        return
        ;;
    '--socket')
        return
        ;;
    esac
}

_parleyctl_devices() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_pair() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    accept|refuse)
        # Offer subcommand argument completions
        "_parleyctl_pair_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'accept refuse' -- "${cur}"))
        ;;
    esac
}

_parleyctl_pair_accept() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_pair_refuse() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_unpair() {
    repeating_flags=()
    non_repeating_flags=(--json --verbose --no-color --no-pager --version -h --help)
    repeating_options=()
    non_repeating_options=(--socket)
    __parleyctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--socket')
        return
        ;;
    esac
}

_parleyctl_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __parleyctl_offer_flags_options -1
}

complete -o filenames -F _parleyctl parleyctl
