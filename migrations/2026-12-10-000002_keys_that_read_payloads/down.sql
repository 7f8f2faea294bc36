ALTER TABLE admin_keys DROP COLUMN read_payloads;
