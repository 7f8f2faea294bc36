REVOKE SELECT ON messaging_receipt_sweep FROM doorman_admin;
