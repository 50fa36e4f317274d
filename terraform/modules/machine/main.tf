# The machines of one kind: hosts.tf calls it for the control machine and for the
# workers, so that what every machine shares (its image, instance role, hardening and
# encrypted root volume) is written once and no kind is hardened less than another.

variable "names" {
  description = "The Name tag of each machine, one machine a name."
  type        = list(string)
}

variable "machine" {
  description = "What the machines of this kind are: instance type, subnet, security group, root volume size in GiB, user data, and a fixed private address (a single machine only)."
  type = object({
    instance_type     = string
    subnet_id         = string
    security_group_id = string
    volume_gb         = number
    user_data         = string
    private_ip        = optional(string)
  })

  validation {
    condition     = var.machine.private_ip == null || length(var.names) <= 1
    error_message = "machine.private_ip is one machine's address: give one name with it."
  }
}

variable "deployment" {
  description = "What every machine of the deployment has: its image, instance profile, SSH key pair (null: none) and KMS key."
  type = object({
    ami_id           = string
    instance_profile = string
    key_name         = optional(string)
    kms_key_arn      = string
  })
}

resource "aws_instance" "machine" {
  count                  = length(var.names)
  ami                    = var.deployment.ami_id
  instance_type          = var.machine.instance_type
  subnet_id              = var.machine.subnet_id
  private_ip             = var.machine.private_ip
  vpc_security_group_ids = [var.machine.security_group_id]
  iam_instance_profile   = var.deployment.instance_profile
  key_name               = var.deployment.key_name
  monitoring             = true
  ebs_optimized          = true
  user_data              = var.machine.user_data

  # IMDSv2 only, one hop: the host's own tools reach the instance role, containers on
  # Docker's bridge (agents included) cannot.
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = var.machine.volume_gb
    encrypted   = true
    kms_key_id  = var.deployment.kms_key_arn
  }

  # A new image or boot configuration never replaces a running machine (hosts.tf says why).
  lifecycle {
    ignore_changes = [ami, user_data]
  }

  tags = { Name = var.names[count.index] }
}

output "ids" {
  description = "The machines' instance ids, in the order of names."
  value       = aws_instance.machine[*].id
}

output "private_ips" {
  description = "The machines' private addresses, in the order of names."
  value       = aws_instance.machine[*].private_ip
}
