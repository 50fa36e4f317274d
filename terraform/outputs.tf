# What an operator needs after `terraform apply`. README.md here lists them too, and a
# test keeps the two lists equal.

output "url" {
  description = "Address of the site: https://<domain_name> when one is set (TLS is nginx's), else http://<control_public_ip>."
  value       = var.domain_name != "" ? "https://${var.domain_name}" : "http://${aws_eip.control.public_ip}"
}

output "control_public_ip" {
  description = "Elastic IP of the control machine: point the DNS A record of domain_name at it."
  value       = aws_eip.control.public_ip
}

output "control_public_dns" {
  description = "AWS public host name of the control machine."
  value       = aws_eip.control.public_dns
}

output "control_private_ip" {
  description = "Private address of the control machine, where the workers reach PostgreSQL and Redis (CONTROL_HOST of scripts/make_secrets.sh)."
  value       = module.control.private_ips[0]
}

output "worker_private_ips" {
  description = "Private addresses of the worker machines, in order."
  value       = module.worker.private_ips
}

output "ssh_command" {
  description = "How to log in to the control machine (null when ssh_cidr is empty); workers: ssh -J admin@<control_public_ip> admin@<worker private address>."
  value       = local.ssh_enabled ? "ssh admin@${aws_eip.control.public_ip}" : null
}

output "secret_parameters" {
  description = "Names of the SSM parameters holding the generated secrets (aws ssm get-parameter --with-decryption --name ...)."
  value       = sort([for parameter in aws_ssm_parameter.secret : parameter.name])
}

output "vpc_id" {
  description = "The VPC every machine is in."
  value       = aws_vpc.arena.id
}
