-- A stored response whose payload holds "\u0000" (valid JSON, which jsonb refuses: 22P05) is
-- blanked too. Before, its expunge failed for good, and so did every payload expiry sweep, each
-- beginning from the soonest due message. The escape is dropped before the text is read as jsonb:
-- escaped backslashes are set aside first (as chr(1), which JSON text cannot hold raw), so that only
-- a real \u0000 goes; it can only be in the payload (every other field refuses it), which goes anyway.
create or replace function courier_blank_payload(p_body text) returns text language plpgsql stable as $$
begin
  return jsonb_set(p_body::jsonb, '{payload}', '{}'::jsonb)::text;
exception when untranslatable_character then
  return jsonb_set(
    replace(replace(replace(p_body, '\\', chr(1)), '\u0000', ''), chr(1), '\\')::jsonb,
    '{payload}', '{}'::jsonb)::text;
end
$$;
