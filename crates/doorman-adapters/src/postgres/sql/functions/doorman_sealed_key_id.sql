-- The key a sealed value was sealed with: `v1:<key id>:<…>` (adapters' secrets.rs writes the
-- format), '' for a value stored before encryption.
-- Its history: migrations/ up to 2026-12-01-000002_stranded_and_sealed_rules_once.
CREATE OR REPLACE FUNCTION public.doorman_sealed_key_id(p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN p_value LIKE 'v1:%:%' THEN split_part(p_value, ':', 2) ELSE '' END $$;
