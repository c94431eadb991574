// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

interface IPrincipalSink {
    function onPrincipalRepaid(uint256 amount) external;
}

/// @notice A fixed-term loan deployed and funded by a lending pool. The borrower commits,
/// draws the principal, pays interest and principal back to the pool.
contract Loan {
    using SafeERC20 for IERC20;

    event OnLoanFunded(uint256 amount);
    event OnBorrowerCommitment();
    event OnBorrowerWithdrawal(uint256 amount);
    event OnInterestsRepayment(uint256 amount);
    event OnPrincipalRepayment(uint256 amount);
    event OnLoanCalled(uint256 callbackPeriodInDays, uint256 gracePeriodInDays);
    event OnLoanMatured();
    event OnLoanClosed();
    event OnNewAprProposed(uint256 oldApr, uint256 newApr);
    event OnAprAcceptedByBorrower(uint256 oldApr, uint256 newApr);
    event OnCollateralRatioChanged(uint256 oldRatio, uint256 newRatio);
    event OnCollateralCaptured(uint256 amount);
    event OnCollateralClaimed(uint256 amount);

    enum State {
        Preapproved,
        Funded,
        Active,
        Called,
        Matured,
        Closed
    }

    address public immutable lender;
    address public immutable borrower;
    address public immutable principalToken;
    uint256 public immutable initialPrincipalAmount;
    uint256 public immutable deployedDate;
    uint256 public immutable termDays;
    uint256 public apr; // two decimals: 1250 = 12.50%
    uint256 public proposedApr;
    uint256 public principalAmount; // outstanding
    uint256 public totalRepaid;
    State public state;

    constructor(
        address lender_,
        address borrower_,
        address principalToken_,
        uint256 principal_,
        uint256 apr_,
        uint256 termDays_
    ) {
        lender = lender_;
        borrower = borrower_;
        principalToken = principalToken_;
        initialPrincipalAmount = principal_;
        principalAmount = principal_;
        apr = apr_;
        termDays = termDays_;
        deployedDate = block.timestamp;
    }

    modifier onlyLender() {
        require(msg.sender == lender, "Loan: not lender");
        _;
    }

    modifier onlyBorrower() {
        require(msg.sender == borrower, "Loan: not borrower");
        _;
    }

    function fund() external onlyLender {
        require(state == State.Preapproved, "Loan: already funded");
        state = State.Funded;
        emit OnLoanFunded(initialPrincipalAmount);
    }

    function borrowerCommitment() external onlyBorrower {
        require(state == State.Funded, "Loan: not funded");
        state = State.Active;
        emit OnBorrowerCommitment();
    }

    function borrowerWithdraw(uint256 amount) external onlyBorrower {
        require(state == State.Active, "Loan: not active");
        IERC20(principalToken).safeTransfer(borrower, amount);
        emit OnBorrowerWithdrawal(amount);
    }

    /// Interest goes straight to the lending pool.
    function repayInterests(uint256 amount) external onlyBorrower {
        require(state == State.Active || state == State.Called, "Loan: not active");
        IERC20(principalToken).safeTransferFrom(msg.sender, lender, amount);
        totalRepaid += amount;
        emit OnInterestsRepayment(amount);
    }

    function repayPrincipal(uint256 amount) external onlyBorrower {
        require(state != State.Closed && state != State.Preapproved, "Loan: not open");
        require(amount <= principalAmount, "Loan: too much");
        IERC20(principalToken).safeTransferFrom(msg.sender, lender, amount);
        principalAmount -= amount;
        totalRepaid += amount;
        IPrincipalSink(lender).onPrincipalRepaid(amount);
        emit OnPrincipalRepayment(amount);
        if (principalAmount == 0) {
            state = State.Closed;
            emit OnLoanClosed();
        }
    }

    function proposeNewApr(uint256 newApr) external onlyLender {
        proposedApr = newApr;
        emit OnNewAprProposed(apr, newApr);
    }

    function acceptApr() external onlyBorrower {
        require(proposedApr > 0, "Loan: nothing proposed");
        emit OnAprAcceptedByBorrower(apr, proposedApr);
        apr = proposedApr;
        proposedApr = 0;
    }

    function callLoan(uint256 callbackPeriodInDays, uint256 gracePeriodInDays) external onlyLender {
        require(state == State.Active, "Loan: not active");
        state = State.Called;
        emit OnLoanCalled(callbackPeriodInDays, gracePeriodInDays);
    }

    function markMatured() external {
        require(state == State.Active && block.timestamp >= deployedDate + termDays * 1 days, "Loan: not mature");
        state = State.Matured;
        emit OnLoanMatured();
    }
}
